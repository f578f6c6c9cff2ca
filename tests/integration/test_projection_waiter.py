"""CheckpointWaiter: read-your-writes waits on the checkpoints published in Redis."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from events.catalogue import MemoryCommitted, new_event
from projections.core.errors import InvalidQuery
from tests.hash_embedder import HashEmbedder
from projections.memories.projector import MemoriesProjector
from projections.core.runner import ProjectionRunner
from projections.core.waiter import CheckpointWaiter


async def test_already_reached_returns_at_once(store) -> None:
    await store.publish_checkpoint("memories", "1700000000000-5")
    waiter = CheckpointWaiter(store)
    started = time.perf_counter()
    assert await waiter.wait(["memories"], "1700000000000-5")
    assert await waiter.wait(["memories"], "1699999999999-9")
    assert time.perf_counter() - started < 0.2


async def test_positions_compare_as_integer_pairs_not_strings(store) -> None:
    await store.publish_checkpoint("memories", "1700000000000-10")
    waiter = CheckpointWaiter(store)
    assert await waiter.wait(["memories"], "1700000000000-9", timeout_s=0.1)  # "…-10" < "…-9" as strings
    assert not await waiter.wait(["memories"], "1700000000000-11", timeout_s=0.1)


async def test_notify_wakes_a_waiter_before_its_next_poll(store) -> None:
    waiter = CheckpointWaiter(store, poll_s=10.0)  # polling alone would take 10 s
    task = asyncio.create_task(waiter.wait(["memories"], "1700000000000-1", timeout_s=5.0))
    await asyncio.sleep(0.05)
    assert not task.done()
    started = time.perf_counter()
    await store.publish_checkpoint("memories", "1700000000000-1")
    waiter.notify("memories", "1700000000000-1")
    assert await asyncio.wait_for(task, 1.0) is True
    assert time.perf_counter() - started < 0.5


async def test_polling_sees_checkpoints_published_by_another_process(store) -> None:
    waiter = CheckpointWaiter(store)  # nobody calls notify: the runner lives elsewhere
    task = asyncio.create_task(waiter.wait(["memories"], "1700000000000-1", timeout_s=5.0))
    await asyncio.sleep(0.05)
    await store.publish_checkpoint("memories", "1700000000000-2")
    started = time.perf_counter()
    assert await asyncio.wait_for(task, 1.0) is True
    assert time.perf_counter() - started < 0.2


async def test_times_out_with_false(store) -> None:
    await store.publish_checkpoint("memories", "1700000000000-1")
    waiter = CheckpointWaiter(store)
    started = time.perf_counter()
    assert await waiter.wait(["memories"], "1700000000001-0", timeout_s=0.3) is False
    assert 0.28 <= time.perf_counter() - started < 1.0
    assert await waiter.wait(["nobody"], "1-0", timeout_s=0.05) is False


async def test_every_named_projector_must_have_reached(store) -> None:
    await store.publish_checkpoint("memories", "1700000000000-3")
    waiter = CheckpointWaiter(store)
    assert not await waiter.wait(["memories", "graph"], "1700000000000-3", timeout_s=0.1)
    await store.publish_checkpoint("graph", "1700000000000-4")
    assert await waiter.wait(["memories", "graph"], "1700000000000-3", timeout_s=0.1)
    assert await waiter.wait([], "1700000000000-3")


async def test_invalid_positions_are_refused(store) -> None:
    with pytest.raises(InvalidQuery):
        await CheckpointWaiter(store).wait(["memories"], "not-a-position")


async def test_waits_for_a_running_projector(store, tmp_path: Path) -> None:
    waiter = CheckpointWaiter(store, poll_s=10.0)
    p = MemoriesProjector(tmp_path, HashEmbedder())
    stop = asyncio.Event()
    task = asyncio.create_task(ProjectionRunner(store, p, notify=waiter.notify, block_ms=50).run(stop))
    res = await store.append([new_event(MemoryCommitted("m1", "hello", "shared", "fact", "system_fact"),
                                        ns="shared", agent="a")])
    assert await waiter.wait(["memories"], res.position, timeout_s=5.0)
    assert await p.load_checkpoint() == res.position
    stop.set()
    await task
    await p.close()
