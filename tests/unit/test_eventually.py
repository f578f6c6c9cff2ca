"""tests/eventually.py: the one wait helper returns the awaited value and fails naming what it waited for."""

from __future__ import annotations

import time

import pytest

from eventually import eventually, eventually_sync


async def test_returns_the_first_truthy_value_of_a_sync_or_async_check() -> None:
    calls = []

    def sync_check():
        calls.append(1)
        return len(calls) >= 3 and "ready"

    assert await eventually(sync_check, interval_s=0.001) == "ready" and len(calls) == 3

    async def async_check():
        calls.append(1)
        return [len(calls)] if len(calls) >= 5 else []

    assert await eventually(async_check, interval_s=0.001) == [5]


async def test_times_out_with_what_was_awaited_and_the_last_value() -> None:
    started = time.monotonic()
    with pytest.raises(AssertionError, match=r"not reached within 0.05 s: the answer \(last value 0\)"):
        await eventually(lambda: 0, timeout_s=0.05, interval_s=0.01, what="the answer")
    assert 0.05 <= time.monotonic() - started < 1.0


async def test_an_unnamed_check_is_named_by_its_source() -> None:
    with pytest.raises(AssertionError, match=r"test_eventually.py:\d+\) \(last value None\)"):
        await eventually(lambda: None, timeout_s=0.01)


async def test_exceptions_from_the_check_are_not_swallowed() -> None:
    with pytest.raises(ZeroDivisionError):
        await eventually(lambda: 1 / 0)


def test_the_sync_twin() -> None:
    seen = []
    assert eventually_sync(lambda: seen.append(1) or len(seen) > 1, interval_s=0.001) is True
    with pytest.raises(AssertionError, match="not reached within 0.02 s: nothing"):
        eventually_sync(lambda: False, timeout_s=0.02, interval_s=0.005, what="nothing")
