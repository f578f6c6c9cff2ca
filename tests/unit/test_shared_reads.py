"""SharedReads: each batch read once for several runners, a bounded lead, a failed read read again."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from events.catalogue import MemoryCommitted, new_event
from events.envelope import Event
from projections.core.shared_reads import SharedReads

BATCH = 3


def _log(n: int) -> list[Event]:
    out = []
    for i in range(n):
        ev = new_event(MemoryCommitted(f"m{i}", f"memory {i}", "shared", "fact", "system_fact"), ns="shared",
                       agent="a")
        out.append(replace(ev, position=f"{1000 + i}-0"))
    return out


class Log:
    """The batch after a position of an in-memory log, counting reads; `fail` fails the first read of
    those positions once."""

    def __init__(self, events: list[Event], fail: set[str | None] = frozenset()) -> None:
        self.events, self.fail, self.reads = events, set(fail), []

    async def read(self, after: str | None) -> list[Event]:
        self.reads.append(after)
        await asyncio.sleep(0)
        if after in self.fail:
            self.fail.discard(after)
            raise ConnectionError(f"lost the connection reading after {after}")
        start = 0 if after is None else next(i for i, e in enumerate(self.events) if e.position == after) + 1
        return self.events[start:start + BATCH]


async def _consume(read, delay: float, retries: bool = True) -> list[str]:
    seen, after = [], None
    while True:
        try:
            batch = await read(after)
        except ConnectionError:
            if not retries:
                raise
            continue
        if not batch:
            return seen
        seen.extend(e.position for e in batch)
        after = batch[-1].position
        await asyncio.sleep(delay)


async def test_each_batch_is_read_once_for_every_runner() -> None:
    log = Log(_log(20))
    shared = SharedReads(log.read, 3)
    got = await asyncio.gather(*(_consume(shared.reader(i), d) for i, d in enumerate((0, 0.001, 0.003))))
    want = [e.position for e in log.events]
    assert got == [want, want, want]
    assert len(log.reads) == len(set(log.reads)) == 20 // BATCH + 2   # 7 batches and the empty answer


async def test_a_fast_runner_waits_within_the_window_of_the_slowest() -> None:
    log = Log(_log(60))
    shared = SharedReads(log.read, 2, window=2)
    held: list[int] = []

    async def fast() -> list[str]:
        read = shared.reader(0)

        async def watched(after: str | None) -> list[Event]:
            batch = await read(after)
            held.append(len(shared._batches))
            return batch
        return await _consume(watched, 0)

    got = await asyncio.gather(fast(), _consume(shared.reader(1), 0.002))
    assert got[0] == got[1] == [e.position for e in log.events]
    assert max(held) <= 3   # the slowest's batch and at most `window` ahead of it
    assert len(log.reads) == 60 // BATCH + 1


async def test_a_failed_read_is_read_again_for_the_runner_that_retries() -> None:
    events = _log(12)
    log = Log(events, fail={events[2].position})
    shared = SharedReads(log.read, 2)
    got = await asyncio.gather(_consume(shared.reader(0), 0), _consume(shared.reader(1), 0.001))
    assert got == [[e.position for e in events]] * 2
    assert log.reads.count(events[2].position) == 2 and len(log.reads) == 12 // BATCH + 2


async def test_a_failure_reaches_a_runner_that_does_not_retry() -> None:
    events = _log(6)
    shared = SharedReads(Log(events, fail={None}).read, 1)
    with pytest.raises(ConnectionError):
        await _consume(shared.reader(0), 0, retries=False)


def test_needs_a_consumer() -> None:
    with pytest.raises(ValueError):
        SharedReads(Log([]).read, 0)


def test_a_fold_collects_less_often_and_restores_the_collector() -> None:
    import gc

    from projections.core.rebuild_fold import fewer_collections

    before = gc.get_threshold()
    with fewer_collections(12_345):
        assert gc.get_threshold()[0] == 12_345 and gc.get_freeze_count() > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
