"""The projection runner: catch-up, tailing with a stop event, notify, reset detection, upkeep."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import redis.exceptions

from events import positions
from events.catalogue import MemoryCommitted, new_event
from events.errors import LogResetError
from events.redis.store import EventStore
from eventually import eventually
from tests.hash_embedder import HashEmbedder
from projections.memories.projector import MemoriesProjector
from projections.core.runner import ProjectionRunner


def commit(i: int) -> object:
    return new_event(MemoryCommitted(f"m{i}", f"memory {i}", "shared", "fact", "system_fact"), ns="shared",
                     agent="alice")


async def append_n(store, start: int, n: int) -> list[str]:
    return (await store.append([commit(i) for i in range(start, start + n)])).positions


class CountingMaintain(MemoriesProjector):
    maintained = 0

    async def maintain(self) -> None:
        self.maintained += 1
        await super().maintain()


class FlakyApply(MemoriesProjector):
    """Fails its first apply with a transient Redis error, then works."""

    failures = 1

    async def apply(self, events) -> None:
        if self.failures:
            self.failures -= 1
            raise redis.exceptions.ConnectionError("connection reset (injected)")
        await super().apply(events)


class BrokenApply(MemoriesProjector):
    async def apply(self, events) -> None:
        raise ValueError("a bug in the fold")


async def test_catch_up_applies_in_batches_publishes_and_notifies(store, tmp_path: Path) -> None:
    pos = await append_n(store, 0, 7)
    seen: list[tuple[str, str]] = []
    p = MemoriesProjector(tmp_path, HashEmbedder())
    runner = ProjectionRunner(store, p, batch_size=3, notify=lambda n, q: seen.append((n, q)))
    assert await runner.catch_up() == pos[-1]
    assert runner.events_applied == 7
    assert seen == [("memories", pos[2]), ("memories", pos[5]), ("memories", pos[6])]
    assert await store.checkpoint("memories") == pos[-1]
    assert await runner.catch_up() == pos[-1]  # nothing new: nothing applied, same checkpoint
    assert runner.events_applied == 7
    await p.close()


async def test_catch_up_until_stops_there_and_resumes_later(store, tmp_path: Path) -> None:
    pos = await append_n(store, 0, 6)
    p = MemoriesProjector(tmp_path, HashEmbedder())
    assert await ProjectionRunner(store, p, batch_size=4).catch_up(until=pos[2]) == pos[2]
    assert await p.load_checkpoint() == pos[2]
    assert await ProjectionRunner(store, p).catch_up() == pos[-1]
    await p.close()


async def test_run_tails_until_stopped_and_resumes_from_its_checkpoint(store, tmp_path: Path) -> None:
    seen: list[str] = []
    p = MemoriesProjector(tmp_path, HashEmbedder())
    stop = asyncio.Event()
    task = asyncio.create_task(ProjectionRunner(store, p, block_ms=50, notify=lambda n, q: seen.append(q)).run(stop))
    first = await append_n(store, 0, 3)
    await eventually(lambda: _at(store, first[-1]), what="the runner at the first batch")
    second = await append_n(store, 3, 2)
    await eventually(lambda: _at(store, second[-1]), what="the runner at the second batch")
    # the checkpoint is published before the notification: wait for that too (a race under load)
    await eventually(lambda: bool(seen) and seen[-1] == second[-1], what="the second batch notified")
    assert all(positions.key(a) < positions.key(b) for a, b in zip(seen, seen[1:]))
    stop.set()
    await asyncio.wait_for(task, 2.0)
    await p.close()

    third = await append_n(store, 5, 2)
    again = MemoriesProjector(tmp_path, HashEmbedder())
    runner = ProjectionRunner(store, again)
    assert await runner.catch_up() == third[-1]
    assert runner.events_applied == 2  # only what came after the stored checkpoint
    await again.close()


async def _at(store, position: str) -> bool:
    return positions.reached(await store.checkpoint("memories"), position)


async def test_a_reset_log_stops_the_runner_loudly(store, redis, tmp_path: Path) -> None:
    await append_n(store, 0, 3)
    p = MemoriesProjector(tmp_path, HashEmbedder())
    await ProjectionRunner(store, p).catch_up()
    await redis.flushall()  # the log is lost
    with pytest.raises(LogResetError):
        await ProjectionRunner(store, p).catch_up()
    stop = asyncio.Event()
    with pytest.raises(LogResetError):
        await asyncio.wait_for(ProjectionRunner(store, p, block_ms=50).run(stop), 5.0)
    with pytest.raises(LogResetError):  # this store expects the lost log's epoch: nothing is appended
        await append_n(store, 10, 2)
    # new appends by someone else after the loss: every new id lies beyond the old checkpoint
    await append_n(EventStore(redis, origin="other"), 10, 2)
    with pytest.raises(LogResetError):
        await ProjectionRunner(store, p).catch_up()
    await p.close()


async def test_maintain_runs_at_most_every_interval_and_only_after_changes(store, tmp_path: Path) -> None:
    now = [0.0]
    p = CountingMaintain(tmp_path, HashEmbedder(), compact_after_writes=0)
    runner = ProjectionRunner(store, p, maintain_every_s=60, clock=lambda: now[0], block_ms=20)
    await append_n(store, 0, 2)
    await runner.catch_up()
    assert p.maintained == 0  # too early
    now[0] = 61
    await runner.catch_up()
    assert p.maintained == 0  # nothing applied in this call, nothing to wait for
    await append_n(store, 2, 1)
    await runner.catch_up()
    assert p.maintained == 1
    now[0] = 62
    await append_n(store, 3, 1)
    await runner.catch_up()
    assert p.maintained == 1  # less than 60 s since the last one
    now[0] = 200
    stop = asyncio.Event()
    task = asyncio.create_task(runner.run(stop))
    await eventually(lambda: _maintained(p, 1), what="one maintenance run")  # idle, but something was applied since the last one
    now[0] = 400
    await asyncio.sleep(0.2)  # idle loops: nothing applied since, so no further maintenance
    stop.set()
    await task
    assert p.maintained == 2
    await p.close()


async def _maintained(p: CountingMaintain, more_than: int) -> bool:
    return p.maintained > more_than


async def test_transient_redis_errors_are_retried(store, tmp_path: Path) -> None:
    pos = await append_n(store, 0, 3)
    p = FlakyApply(tmp_path, HashEmbedder())
    runner = ProjectionRunner(store, p)
    assert await runner.catch_up() == pos[-1]
    assert p.failures == 0 and runner.events_applied == 3
    await p.close()


async def test_a_failing_projector_is_not_swallowed(store, tmp_path: Path) -> None:
    await append_n(store, 0, 1)
    p = BrokenApply(tmp_path, HashEmbedder())
    with pytest.raises(ValueError, match="a bug in the fold"):
        await asyncio.wait_for(ProjectionRunner(store, p, block_ms=20).run(asyncio.Event()), 5.0)
    assert await store.checkpoint("memories") is None
    await p.close()


async def test_scratch_runners_do_not_publish(store, tmp_path: Path) -> None:
    await append_n(store, 0, 2)
    p = MemoriesProjector(tmp_path, HashEmbedder())
    await ProjectionRunner(store, p, publish=False).catch_up()
    assert await store.checkpoints() == {}
    await p.close()


async def test_generations_are_published_per_namespace_and_ignore_recall_served(store, tmp_path: Path) -> None:
    from events.catalogue import MemoryDeleted, RecallServed

    def commit_in(mid: str, ns: str):
        return new_event(MemoryCommitted(mid, f"memory {mid}", ns, "fact", "system_fact"), ns=ns, agent="alice")

    first = await store.append([commit_in("a1", "alice-main"), commit_in("s1", "shared")])
    p = MemoriesProjector(tmp_path, HashEmbedder())
    await ProjectionRunner(store, p).catch_up()
    fields = [("memories", "alice-main"), ("memories", "shared"), ("memories", "bob-main")]
    assert await store.generations(fields) == [first.positions[0], first.positions[1], ""]

    await store.append([new_event(RecallServed("q", ("shared",), ("s1",), (0.9,), 5), ns="shared", agent="alice")])
    await ProjectionRunner(store, p).catch_up()
    assert await store.generations(fields) == [first.positions[0], first.positions[1], ""]  # reads unchanged

    deleted = await store.append([new_event(MemoryDeleted("s1", "shared", 2), ns="shared", agent="alice")])
    await ProjectionRunner(store, p).catch_up()
    assert await store.generations(fields) == [first.positions[0], deleted.position, ""]
    await p.close()


def recall_served(*ids: str):
    from events.catalogue import RecallServed

    return new_event(RecallServed("q", ("shared",), ids, tuple(0.5 for _ in ids)), ns="shared", agent="alice")


class CountingApply(MemoriesProjector):
    applied = 0

    async def apply(self, events) -> None:
        self.applied += 1
        await super().apply(events)


async def test_a_batch_of_ignored_events_is_published_but_stored_later(store, tmp_path: Path) -> None:
    """recall.served alone (memories ignore it): not applied, the checkpoint published and notified at
    once, stored by the projector when the tail goes idle (and on stop)."""
    commits = await append_n(store, 0, 2)
    p = CountingApply(tmp_path, HashEmbedder())
    seen: list[str] = []
    runner = ProjectionRunner(store, p, block_ms=1500, notify=lambda n, q: seen.append(q))
    stop = asyncio.Event()
    task = asyncio.create_task(runner.run(stop))
    await eventually(lambda: _at(store, commits[-1]), what="the commits folded")
    applied = p.applied
    recalls = (await store.append([recall_served("m0"), recall_served("m1")])).positions
    await eventually(lambda: _at(store, recalls[-1]), what="the recalls published")
    assert seen[-1] == recalls[-1] and p.applied == applied                # not applied
    assert await p.load_checkpoint() == commits[-1]                      # not stored yet
    await eventually(lambda: _stored(p, recalls[-1]), what="stored once the tail went idle")
    more = (await store.append([recall_served("m0")])).positions
    await eventually(lambda: _at(store, more[-1]), what="one more published")
    stop.set()
    await asyncio.wait_for(task, 2.0)
    assert await p.load_checkpoint() == more[-1] and p.applied == applied  # stored on stop
    await p.close()


async def _stored(p, position: str) -> bool:
    return await p.load_checkpoint() == position


async def test_a_checkpoint_behind_is_stored_with_the_next_applied_batch_or_after_flush_every_s(
        store, tmp_path: Path) -> None:
    now = [0.0]
    p = CountingApply(tmp_path, HashEmbedder())
    runner = ProjectionRunner(store, p, batch_size=1, clock=lambda: now[0], flush_every_s=10)
    first = (await store.append([commit(0), recall_served("m0")])).positions
    await runner.catch_up()
    assert p.applied == 1 and await p.load_checkpoint() == first[-1]      # the end of a catch-up stores it
    second = (await store.append([recall_served("m0"), recall_served("m0"), commit(1)])).positions
    assert await runner.catch_up(until=second[1]) == second[1]
    assert await p.load_checkpoint() == second[1]
    await runner.catch_up()   # the commit's own checkpoint
    assert p.applied == 2 and await p.load_checkpoint() == second[-1]
    # time-based: a skipped batch stores the checkpoint once flush_every_s passed since the first one behind
    third = (await store.append([recall_served("m0"), recall_served("m0"), recall_served("m0")])).positions
    runner2 = ProjectionRunner(store, p, batch_size=1, clock=lambda: now[0], flush_every_s=10, block_ms=5000)
    await runner2._start(None)
    batches = [[e] for e in await store.read(second[-1])]
    await runner2._apply(batches[0], None)
    now[0] = 5
    await runner2._apply(batches[1], None)
    assert await p.load_checkpoint() == second[-1]   # behind, for less than 10 s
    now[0] = 11
    await runner2._apply(batches[2], None)
    assert await p.load_checkpoint() == third[-1] and p.applied == 2
    # behind, then an applied batch: its own (later) checkpoint is stored with its rows
    fourth = (await store.append([recall_served("m0"), commit(2)])).positions
    batches = [[e] for e in await store.read(third[-1])]
    await runner2._apply(batches[0], None)
    assert await p.load_checkpoint() == third[-1]
    await runner2._apply(batches[1], None)
    assert await p.load_checkpoint() == fourth[-1] and p.applied == 3
    await p.close()


async def test_a_crash_while_behind_re_reads_the_ignored_events_and_ends_the_same(store, tmp_path: Path) -> None:
    commits = await append_n(store, 0, 3)
    p = MemoriesProjector(tmp_path, HashEmbedder())
    stop = asyncio.Event()
    runner = ProjectionRunner(store, p, block_ms=5000, flush_every_s=3600)
    task = asyncio.create_task(runner.run(stop))
    await eventually(lambda: _at(store, commits[-1]), what="the commits folded")
    digest = await p.digest()
    recalls = (await store.append([recall_served("m0", "m1"), recall_served("m2")])).positions
    await eventually(lambda: _at(store, recalls[-1]), what="the recalls published")
    task.cancel()   # a crash: nothing more is stored
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await p.load_checkpoint() == commits[-1]
    await p.close()

    again = MemoriesProjector(tmp_path, HashEmbedder())
    restarted = ProjectionRunner(store, again)
    assert await restarted.catch_up() == recalls[-1]
    assert restarted.events_applied == 2 and await again.load_checkpoint() == recalls[-1]
    assert await again.digest() == digest
    await again.close()


class UpkeepLater(CountingMaintain):
    """Says upkeep is due (as after a maintain that had to keep versions younger than the retention)."""

    due = False

    def upkeep_due(self) -> bool:
        return self.due

    async def maintain(self) -> None:
        self.due = False
        await super().maintain()


async def test_an_idle_runner_maintains_when_upkeep_is_due(store, tmp_path: Path) -> None:
    p = UpkeepLater(tmp_path, HashEmbedder(), compact_after_writes=0)
    runner = ProjectionRunner(store, p, maintain_every_s=3600, block_ms=20)
    await append_n(store, 0, 2)
    stop = asyncio.Event()
    task = asyncio.create_task(runner.run(stop))
    await eventually(lambda: runner.checkpoint is not None, what="the commits folded")
    await asyncio.sleep(0.1)
    assert p.maintained == 0   # applied, but the interval has not passed
    p.due = True
    await eventually(lambda: _maintained(p, 0), what="the upkeep run while idle")
    await asyncio.sleep(0.1)
    stop.set()
    await task
    assert p.maintained == 1   # done once: no longer due


class SizedApply:
    """The activity projector (it folds recall.served), recording the size of every batch applied."""

    def __new__(cls, directory: Path):
        from projections.activity.projector import ActivityProjector

        class Sized(ActivityProjector):
            sizes: list[int] = []

            async def apply(self, events) -> None:
                self.sizes.append(len(events))
                await super().apply(events)

        p = Sized(directory)
        p.sizes = []
        return p


async def test_tailing_recall_audits_alone_wait_for_more_and_anything_else_ends_the_wait(
        store, tmp_path: Path) -> None:
    """gather_s: a batch of recall.served alone is held for more (one fold for several audit appends);
    another kind of event is folded at once with what came before it; stopping mid-wait loses nothing."""
    p = SizedApply(tmp_path / "a")
    runner = ProjectionRunner(store, p, block_ms=1000, gather_s=1.5)
    stop = asyncio.Event()
    task = asyncio.create_task(runner.run(stop))
    started = asyncio.get_running_loop().time()
    for ids in (("m0", "m1"), ("m1",), ("m2",)):   # three audit appends, 0.1 s apart
        last = (await store.append([recall_served(*ids)])).position
        await asyncio.sleep(0.1)
    await eventually(lambda: _at_activity(store, last), timeout_s=10, what="the audits folded")
    assert p.sizes == [3]                                                   # one fold, after the wait
    assert asyncio.get_running_loop().time() - started >= 1.4

    await store.append([recall_served("m3")])
    await asyncio.sleep(0.1)
    commit_at = asyncio.get_running_loop().time()
    ends = (await append_n(store, 0, 1))[-1]
    await eventually(lambda: _at_activity(store, ends), what="the commit folded")
    assert asyncio.get_running_loop().time() - commit_at < 1.0             # not held for gather_s
    assert p.sizes == [3, 2]                                                # the audit and the commit together

    held = (await store.append([recall_served("m4")])).position
    await asyncio.sleep(0.3)
    stop.set()
    await asyncio.wait_for(task, 2.0)                                       # stops mid-wait
    assert not await _at_activity(store, held) and p.sizes == [3, 2]
    await ProjectionRunner(store, p).catch_up()                             # the held audit is read again
    assert p.sizes == [3, 2, 1] and await p.load_checkpoint() == held
    await p.close()


async def _at_activity(store, position: str) -> bool:
    return positions.reached(await store.checkpoint("activity"), position)
