"""ZHIYI_RATE_LIMITS: unset is the seed's quotas, `off` none, JSON replaces the named types' quotas;
anything else is refused with what is wrong."""

from __future__ import annotations

import pytest

from commands.rate_limits import SEED_QUOTAS, Quota, Quotas, RateLimits
from gateway.process.settings import Environment


def test_unset_is_the_seeds_quotas_and_off_is_none() -> None:
    limits = RateLimits.parse(None)
    assert limits is not None and dict(limits.by_type) == SEED_QUOTAS
    assert limits.for_agent("hermes") == Quotas(Quota(10, 20), Quota(2, 5))
    assert limits.for_agent("cron") == limits.for_agent("generic") == Quotas(Quota(5, 10), Quota(1, 3))
    assert RateLimits.parse("off") is None and RateLimits.parse(" OFF ") is None
    assert Environment.read({}).rate_limits == RateLimits()
    assert Environment.read({"ZHIYI_RATE_LIMITS": "off"}).rate_limits is None


def test_json_replaces_the_named_quotas() -> None:
    limits = RateLimits.parse('{"hermes": {"read": [50, 100]}, "batch": {"read": [1, 1], "write": [0.5, 2]}}')
    assert limits is not None
    assert limits.for_agent("hermes") == Quotas(Quota(50, 100), Quota(2, 5))      # write kept from the seed
    assert limits.for_agent("batch") == Quotas(Quota(1, 1), Quota(0.5, 2))
    assert limits.for_agent("openclaw") == SEED_QUOTAS["openclaw"]


@pytest.mark.parametrize("text", ['[1, 2]', '{"hermes": []}', '{"hermes": {"reads": [1, 2]}}',
                                  '{"hermes": {"read": [0, 2]}}', '{"hermes": {"read": [1, 2.5]}}',
                                  '{"hermes": {"read": [1]}}', '{"hermes": {"read": [true, 2]}}', "on", "{"])
def test_malformed_settings_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="ZHIYI_RATE_LIMITS"):
        RateLimits.parse(text)
