"""The log's epoch (events.redis.keys.EPOCH): the append script refuses a write to a wiped or foreign log,
a log written before epochs is adopted, projections record theirs and their runners refuse another
log's, the projectors wait through a reset and fold on after `replay --in-place`, and a Redis that
cannot be reached is never taken for a reset."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
import redis.exceptions

from events.redis.instances import Instances
from events.redis import keys
from events.catalogue import MemoryCommitted, new_event
from events.errors import LogResetError
from events.redis.client import connect
from events.redis.store import EventStore
from eventually import eventually
from gateway.http.epoch_guard import EpochGuard
from projections.core.epoch import load_epoch, open_projections_epoch, save_epoch
from tests.hash_embedder import HashEmbedder
from projections.memories.projector import MemoriesProjector
from projections.core.replay_in_place import NothingToReset, rebuild_in_place
from projections.core.runner import ProjectionRunner
from projections.core.runner_set import RunnerSet


def commit(i: int) -> object:
    return new_event(MemoryCommitted(f"m{i}", f"memory {i}", "shared", "fact", "system_fact"), ns="shared",
                     agent="alice")


async def test_the_append_script_refuses_a_missing_or_foreign_epoch(store, redis) -> None:
    await store.append([commit(0)])
    epoch = await store.log_epoch()
    assert epoch and store.epoch == epoch
    stranger = EventStore(redis, origin="x", epoch="another-log")
    with pytest.raises(LogResetError, match="its epoch is " + epoch):
        await stranger.append([commit(1)])
    await redis.delete(keys.EPOCH)  # the log lost its identity (as after a FLUSHALL, with a stream left)
    with pytest.raises(LogResetError, match="epoch is missing"):
        await store.append([commit(2)])
    assert await redis.xlen(keys.STREAM) == 1  # neither refused write was appended, nor its indexes
    assert await store.memory_index("m1") is None and await store.memory_index("m2") is None


async def test_an_empty_log_gets_an_epoch_and_a_legacy_log_is_adopted(redis) -> None:
    fresh = EventStore(redis, origin="a")
    assert await fresh.open_epoch(create=False, adopt=False) is None
    created = await fresh.open_epoch()
    assert created and await EventStore(redis, origin="b").open_epoch() == created  # one log, one epoch
    await fresh.append([commit(0)])
    await redis.delete(keys.EPOCH)  # a log written before epochs existed
    legacy = EventStore(redis, origin="c")
    assert await legacy.open_epoch(adopt=False) is None
    adopted = await legacy.open_epoch()
    assert adopted and adopted != created
    await legacy.append([commit(1)])
    assert await redis.xlen(keys.STREAM) == 2


async def test_projections_take_the_logs_epoch_only_when_they_have_none(redis, tmp_path: Path) -> None:
    store = EventStore(redis, origin="a")
    await EventStore(redis, origin="w").append([commit(0)])
    await redis.delete(keys.EPOCH)  # legacy log, legacy projections (no EPOCH file): adopted by both
    epoch = await open_projections_epoch(store, tmp_path)
    assert epoch and load_epoch(tmp_path) == epoch == await store.log_epoch() == store.epoch

    await redis.flushall()  # wiped: projections that carry an epoch never create or adopt another
    other = EventStore(redis, origin="b")
    assert await open_projections_epoch(other, tmp_path) == epoch
    assert await redis.exists(keys.EPOCH) == 0
    with pytest.raises(LogResetError):
        await other.append([commit(1)])
    assert await redis.xlen(keys.STREAM) == 0


async def test_a_runner_refuses_a_log_its_projection_was_not_folded_from(store, tmp_path: Path) -> None:
    await store.append([commit(i) for i in range(3)])
    p = MemoriesProjector(tmp_path, HashEmbedder())
    try:
        with pytest.raises(LogResetError, match="expected folded-elsewhere"):
            await ProjectionRunner(store, p, epoch="folded-elsewhere").catch_up()
        assert await p.load_checkpoint() is None  # refused before folding anything
        last = await ProjectionRunner(store, p, epoch=store.epoch).catch_up()
        assert last == await store.last_position()
    finally:
        await p.close()


async def test_the_projectors_wait_through_a_reset_and_fold_on_after_replay_in_place(redis, tmp_path: Path) -> None:
    store, embedder = EventStore(redis, origin="p"), HashEmbedder()
    writer = EventStore(redis, origin="w")
    await writer.append([commit(0), commit(1)])
    runners = RunnerSet(store, tmp_path, embedder, poll_s=0.05)
    stop = asyncio.Event()
    task = asyncio.create_task(runners.run(stop))
    try:
        last = await writer.last_position()
        await eventually(lambda: _at(store, last), timeout_s=10, what="the runners at the last position")
        old = load_epoch(tmp_path)
        await redis.flushall()
        await eventually(lambda: runners.waiting, timeout_s=10, what="the runners waiting on the reset log")
        await asyncio.sleep(0.2)
        assert not task.done() and await redis.xlen(keys.STREAM) == 0

        done = await rebuild_in_place(EventStore(redis, origin="replay"), tmp_path, embedder)
        assert (done.previous_epoch, done.kept) == (old, tmp_path / f"projections.{old}")
        new_writer = EventStore(redis, origin="w2")
        pos = (await new_writer.append([commit(7)])).position
        await eventually(lambda: _at(store, pos), timeout_s=10, what="the runners at the new log's position")
        assert not runners.waiting and store.epoch == done.epoch
        reader = MemoriesProjector(tmp_path / "projections" / "memories", embedder)
        assert await reader.load_checkpoint() == pos
        await reader.close()
        with pytest.raises(NothingToReset):
            await rebuild_in_place(EventStore(redis, origin="replay"), tmp_path, embedder)
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


async def _at(store: EventStore, position: str | None) -> bool:
    return position is not None and await store.checkpoint("memories") == position


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"  # nothing listens there: connections are refused


async def test_an_unreachable_redis_is_not_a_reset(tmp_path: Path) -> None:
    redis = connect(_dead_url())
    try:
        store = EventStore(redis, origin="x", epoch="e1")
        with pytest.raises(redis_exceptions()):  # transient: the runner retries it, never stops for it
            await store.check_not_reset("1-0", "e1")
        save_epoch(tmp_path, "e1")
        guard = EpochGuard(store, tmp_path)
        await guard.open()              # unknown: no error, reads go on
        await guard.check()
        guard.serving = "e1"
        await guard.check()             # still no log_reset
        runner = ProjectionRunner(store, MemoriesProjector(tmp_path / "m", HashEmbedder()), epoch="e1",
                                  backoff_max_s=0.05)
        with pytest.raises(asyncio.TimeoutError):  # retried, not refused
            await asyncio.wait_for(runner.catch_up(), 0.5)
        await runner.projector.close()
    finally:
        await redis.aclose()


def redis_exceptions() -> tuple[type[BaseException], ...]:
    return (redis.exceptions.ConnectionError, ConnectionError, OSError)


async def test_the_guard_sees_a_flushall_at_the_next_check(store, redis, tmp_path: Path) -> None:
    guard = EpochGuard(store, tmp_path)
    await guard.open()
    assert guard.serving == store.epoch == load_epoch(tmp_path)
    await guard.check()
    await redis.flushall()
    with pytest.raises(LogResetError):
        await guard.check()
    checks = await asyncio.gather(*(guard.check() for _ in range(20)), return_exceptions=True)
    assert all(isinstance(c, LogResetError) for c in checks)  # concurrent checks share reads, none stale


async def test_a_check_never_trusts_a_read_begun_before_it(store, redis, redis_url, tmp_path: Path) -> None:
    """The read in flight when a check arrives may predate a FLUSHALL: the check waits for the next."""
    guard = EpochGuard(store, tmp_path)
    await guard.open()
    epoch = guard.serving
    other = connect(redis_url)
    try:
        for _ in range(20):
            earlier = asyncio.create_task(guard.check())
            await asyncio.sleep(0)          # its GET is on its way
            await other.flushall()          # on another connection, after that GET
            with pytest.raises(LogResetError):
                await guard.check()
            await asyncio.gather(earlier, return_exceptions=True)
            await redis.set(keys.EPOCH, epoch)
            await guard.check()
    finally:
        await other.aclose()


async def test_heartbeats_carry_the_epoch(store, redis) -> None:
    epoch = await store.open_epoch()
    instances = Instances(redis)
    await instances.beat("node-1", "projector", {"position": None}, now_ms=1, info="projector:memories", epoch=epoch)
    beat = await instances.heartbeat("node-1", "projector")
    assert beat == {"token": instances.token, "info": "projector:memories", "epoch": epoch}


async def test_a_checkpoint_is_published_only_into_its_own_log(store, redis) -> None:
    epoch = await store.open_epoch()
    await store.publish_checkpoint("memories", "5-0", {"shared": "5-0"}, epoch=epoch)
    assert await store.checkpoint("memories") == "5-0"
    assert await store.generations([("memories", "shared")]) == ["5-0"]
    await redis.flushall()  # a runner that read its batch before the wipe applies it after
    with pytest.raises(LogResetError):
        await store.publish_checkpoint("memories", "6-0", {"shared": "6-0"}, epoch=epoch)
    assert await redis.exists(keys.CHECKPOINTS, keys.GENERATIONS) == 0  # the wiped Redis gets no stale position


async def test_audits_of_a_wiped_log_are_dropped_not_carried_into_the_next(store, redis, tmp_path: Path) -> None:
    from events.catalogue import RecallServed
    from gateway.http.audit import AuditWriter

    await store.append([commit(0)])
    writer = AuditWriter(store, spill_dir=tmp_path / "spill", instance="t")
    try:
        writer.add(new_event(RecallServed(query="q", namespaces=("shared",), result_ids=("m0",), scores=(0.5,),
                                          top_k=5), ns="shared", agent="alice"))
        await redis.flushall()
        assert await writer.flush()          # refused for the wiped log: dropped, not kept for the next log
        assert writer.buffered == 0 and writer.appended == 0
        store.epoch = await EventStore(redis, origin="replay").open_epoch()  # as after `replay --in-place`
        assert await writer.flush() and await redis.xlen(keys.STREAM) == 0
    finally:
        await writer.close()
