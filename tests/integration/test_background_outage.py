"""Background loops through a Redis outage (a redis-server the test stops and starts on the same
port): the reactions runner (even when Redis is away at its start) and the scheduler keep running
and resume within seconds of Redis returning; nothing is handled twice."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
import redis.exceptions

from commands.reactions.runner import ReactionsRunner
from commands.triggers.service import TriggerService
from events.clock import ManualClock
from events.redis.client import connect
from events.redis.store import EventStore
from eventually import eventually
from redis_process import RestartableRedis
from test_reactions_runner import Echo, _follow_ups, commit

pytestmark = pytest.mark.slow  # outages of several seconds: ~5 s and ~6.5 s


@pytest.fixture
def outage_redis(tmp_path):
    server = RestartableRedis(tmp_path / "redis")
    yield server
    server.stop()


async def _until(predicate, timeout_s: float) -> float:
    """Seconds until `predicate()` (an async callable) holds; fails after `timeout_s`."""
    started = asyncio.get_running_loop().time()
    await eventually(predicate, timeout_s=timeout_s, interval_s=0.05)
    return asyncio.get_running_loop().time() - started


async def test_reactions_start_while_redis_is_away_and_resume_after_an_outage(outage_redis):
    redis = connect(outage_redis.url)
    store = EventStore(redis, origin="t")
    runner = ReactionsRunner(store, [Echo()], consumer="w1", block_ms=200)
    stop = asyncio.Event()
    task = asyncio.create_task(runner.run(stop))      # Redis is not there yet
    try:
        await asyncio.sleep(1.0)
        assert not task.done()
        outage_redis.start()
        await store.append([commit(1)])
        await _until(lambda: _has(store, 1), timeout_s=5)
        outage_redis.stop()
        await asyncio.sleep(3.0)                       # the back-off reaches its 2 s cap
        assert not task.done()
        outage_redis.start()
        await store.append([commit(2)])
        took = await _until(lambda: _has(store, 2), timeout_s=5)
        assert took < 4.0
        assert not task.done()
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await redis.aclose()
    redis = connect(outage_redis.url)
    try:
        follow_ups = await _follow_ups(EventStore(redis, origin="t"))
    finally:
        await redis.aclose()
    assert sorted(follow_ups.values()) == [1, 1]       # each cause handled once


async def _has(store: EventStore, n: int) -> bool:
    try:
        return sum((await _follow_ups(store)).values()) >= n
    except (redis.exceptions.ConnectionError, ConnectionError):
        return False


class _FlakyTriggers(TriggerService):
    """An evaluation that meets Redis away twice, then succeeds (the loop is what is tested)."""

    def __init__(self) -> None:
        super().__init__(store=None, reader=None, waiter=None, clock=ManualClock(0))
        self.calls: Counter = Counter()

    async def run_due(self):  # type: ignore[override]
        self.calls["tick"] += 1
        if self.calls["tick"] <= 2:
            raise redis.exceptions.ConnectionError("Connection refused")
        return []


async def test_a_tick_failed_by_an_outage_is_retried_in_seconds_not_an_interval_later():
    scheduler = _FlakyTriggers()
    stop = asyncio.Event()
    task = asyncio.create_task(scheduler.run(stop, interval_s=2.0))
    try:
        async def third_tick() -> bool:
            return scheduler.calls["tick"] >= 3

        # first tick at 2 s, retried 0.1 and 0.2 s later (about 2.3 s); an interval apart it would be 6 s
        assert await _until(third_tick, timeout_s=5.0) < 4.0
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)
