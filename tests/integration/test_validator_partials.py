"""PassiveValidator P3 accumulation against a real Redis: every third partial overlap of a memory
earns +0.10, and a redelivered commit keeps its place (never counted twice)."""

from __future__ import annotations

from commands.reactions.validator import PassiveValidatorPolicy
from events.redis.counters import Counters


async def test_every_third_partial_overlap_counts_once(redis):
    policy = PassiveValidatorPolicy(recall=None, reader=None, counters=Counters(redis))
    causes = [f"{1000 + i}-0" for i in range(7)]
    got = [await policy._third_partial("m1", c) for c in causes]
    assert got == [False, False, True, False, False, True, False]
    # redelivered causes answer as before
    assert await policy._third_partial("m1", causes[2]) is True
    assert await policy._third_partial("m1", causes[3]) is False
    # per memory
    assert await policy._third_partial("m2", causes[0]) is False
    assert await redis.zcard("zhiyi:validator:p3:m1") == 7
    assert await redis.ttl("zhiyi:validator:p3:m1") > 0
