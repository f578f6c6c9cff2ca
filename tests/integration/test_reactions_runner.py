"""The reactions runner against a real Redis: follow-ups exactly once per cause, a worker killed
mid-batch loses and duplicates nothing, dead letters, and waiting for projections."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from commands.reactions.runner import ProjectionLag, ReactionsRunner
from events.redis import keys
from events.catalogue import MemoryCommitted, SynonymAdded, new_event
from events.envelope import Event
from projections.core.waiter import CheckpointWaiter


def commit(i: int) -> Event:
    return new_event(MemoryCommitted(f"m{i}", f"memory {i}", "shared", "fact", "system_fact"), ns="shared",
                     agent="alice")


class Echo:
    """For each commit, one follow-up event naming the memory."""

    name = "echo"
    reads: tuple[str, ...] = ()

    def wants(self, event: Event) -> bool:
        return event.type == "memory.committed"

    async def decide(self, event: Event) -> list[Event]:
        return [new_event(SynonymAdded(f"echo-{event.data.memory_id}", ("x",)), ns="shared", agent="reactions")]


class Gate:
    """Decides nothing; blocks forever on one memory while `stuck` (a worker hanging mid-batch)."""

    name = "gate"
    reads: tuple[str, ...] = ()

    def __init__(self, stuck_on: str | None) -> None:
        self.stuck_on = stuck_on
        self.reached = asyncio.Event()

    def wants(self, event: Event) -> bool:
        return event.type == "memory.committed"

    async def decide(self, event: Event) -> list[Event]:
        if event.data.memory_id == self.stuck_on:
            self.reached.set()
            await asyncio.Event().wait()
        return []


class Broken:
    name = "broken"
    reads: tuple[str, ...] = ()

    def wants(self, event: Event) -> bool:
        return event.type == "memory.committed"

    async def decide(self, event: Event) -> list[Event]:
        raise RuntimeError("this policy always fails")


async def _follow_ups(store) -> Counter:
    return Counter(e.cause for e in await store.read() if e.type == "synonym.added")


async def test_every_event_gets_its_follow_ups_exactly_once(store) -> None:
    res = await store.append([commit(i) for i in range(10)])
    runner = ReactionsRunner(store, [Echo()], consumer="w1", block_ms=10)
    assert await runner.drain() == 20  # the commits, then the follow-ups (which are events too)
    follow = await _follow_ups(store)
    assert follow == Counter({pos: 1 for pos in res.positions})
    # a second worker of the same group finds nothing left; re-handling an event appends nothing
    assert await ReactionsRunner(store, [Echo()], consumer="w2", block_ms=10).drain() == 0
    await runner.handle((await store.read(end=res.positions[0], count=1))[0])
    assert await _follow_ups(store) == follow
    assert await runner.drain() == 0 and await _follow_ups(store) == follow


async def test_a_worker_killed_mid_batch_loses_and_duplicates_nothing(store) -> None:
    res = await store.append([commit(i) for i in range(10)])
    gate = Gate(stuck_on="m4")
    doomed = ReactionsRunner(store, [Echo(), gate], consumer="doomed", block_ms=10, batch=100)
    task = asyncio.create_task(doomed.step())
    await asyncio.wait_for(gate.reached.wait(), 5)
    # m4's echo was appended, but m4 (and everything after it in the batch) was never acknowledged
    assert len(await _follow_ups(store)) == 5
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pending = await store.redis.xpending_range(keys.STREAM, keys.REACTIONS_GROUP, "-", "+", 100)
    assert len(pending) == 6
    await asyncio.sleep(0.1)
    survivor = ReactionsRunner(store, [Echo(), Gate(None)], consumer="survivor", block_ms=10, claim_idle_ms=50)
    await survivor.drain()
    assert await _follow_ups(store) == Counter({pos: 1 for pos in res.positions})
    assert await store.redis.xpending_range(keys.STREAM, keys.REACTIONS_GROUP, "-", "+", 100) == []


async def test_an_event_that_keeps_failing_goes_to_the_dead_letter_stream(store) -> None:
    res = await store.append([commit(1)])
    runner = ReactionsRunner(store, [Broken()], consumer="w1", block_ms=10, claim_idle_ms=0, max_deliveries=3)
    for _ in range(6):
        await runner.step()
    dead = await store.redis.xrange(keys.REACTIONS_DEAD)
    assert len(dead) == 1
    assert dead[0][1][b"position"].decode() == res.position
    assert await store.redis.xpending_range(keys.STREAM, keys.REACTIONS_GROUP, "-", "+", 10) == []


async def test_a_policy_waits_for_the_projections_it_reads(store) -> None:
    class Reader(Echo):
        name = "reader"
        reads = ("memories",)

    res = await store.append([commit(1)])
    runner = ReactionsRunner(store, [Reader()], consumer="w1", waiter=CheckpointWaiter(store, poll_s=0.01),
                             block_ms=10, wait_s=0.2)
    event = (await store.read())[0]
    with pytest.raises(ProjectionLag):
        await runner.handle(event)
    assert await _follow_ups(store) == Counter()
    await store.publish_checkpoint("memories", res.position)
    await runner.handle(event)
    assert await _follow_ups(store) == Counter({res.position: 1})
