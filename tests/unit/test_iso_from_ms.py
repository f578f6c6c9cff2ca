"""`events.hlc.iso_from_ms`: every stamp a fold or a reader formats goes through it."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from events.hlc import iso_from_ms


def _by_datetime(ms: int) -> str:
    """The plain definition: a datetime of the milliseconds, formatted."""
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def test_the_remembered_seconds_give_what_formatting_each_stamp_gives() -> None:
    rng = random.Random(4)
    edges = [0, 1, 999, 1000, 1001, -1, -999, -1000, -1001, 1_796_521_968_999, 253_402_300_799_999]
    stamps = edges + [rng.randrange(-10 ** 12, 253_402_300_799_999) for _ in range(20_000)]
    stamps += [1_796_521_968_000 + rng.randrange(5_000) for _ in range(5_000)]   # many in the same seconds
    assert [iso_from_ms(ms) for ms in stamps] == [_by_datetime(ms) for ms in stamps]
    assert iso_from_ms(1_796_521_968_480) == "2026-12-06T01:52:48.480Z"
