"""The projector contract (projections.core.projector), checked for every projector of the registry.

Each test runs once per name in `projections.core.registry.NAMES`, over the committed fixture log
(tests/fixtures/event_log.jsonl: every catalogued event type), with the real runner, the real
projectors as the registry builds them, a real Redis and a temporary data directory:

- a crash between a batch's rows and its checkpoint, then a restart that re-applies the batch from
  the old checkpoint, ends with the digest of a clean run (nothing counted twice);
- events of unknown types advance the checkpoint and change nothing;
- folding the same log twice (two replays, and the log delivered again over a folded projection)
  gives the same digest;
- the event types a projector declares ignored (`Skipping.ignored_types`) change nothing, and its
  `advance` stores a checkpoint moved past them.

A projector on a new storage base needs a crash seam here (`crash_before_checkpoint`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from events.catalogue import RecallServed, new_event
from events.envelope import Event, UnknownPayload
from events.redis.store import EventStore
from projections.core.lance_projection import LanceProjection
from projections.core.projector import Projector, Skipping
from projections.core.registry import NAMES, make_projectors
from projections.core.runner import ProjectionRunner
from projections.core.sqlite_projection import SqliteProjection
from tests.fixture_log import load_fixture_log
from tests.hash_embedder import HashEmbedder

each_projector = pytest.mark.parametrize("name", NAMES)


class SimulatedCrash(Exception):
    pass


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder(dim=16)


@pytest.fixture
async def log(store: EventStore, redis) -> list[Event]:
    """The fixture log, loaded into the test's empty Redis; its events, oldest first."""
    await load_fixture_log(redis)
    return await store.read()


@pytest.fixture
async def opened(name: str, embedder: HashEmbedder) -> AsyncIterator[Callable[[Path], Awaitable[Projector]]]:
    """`open(root)`: the registry's projector `name` over `root` (the others it builds are closed);
    every projector opened is closed at the end of the test."""
    projectors: list[Projector] = []

    async def open_(root: Path) -> Projector:
        chosen = None
        for p in make_projectors(root, embedder):
            if p.name == name:
                chosen = p
            else:
                await p.close()
        assert chosen is not None, f"the registry builds no projector named {name!r}"
        projectors.append(chosen)
        return chosen

    yield open_
    for p in projectors:
        await p.close()


async def fold(store: EventStore, projector: Projector, batch_size: int = 7) -> ProjectionRunner:
    runner = ProjectionRunner(store, projector, publish=False, batch_size=batch_size)
    await runner.catch_up()
    return runner


def crash_before_checkpoint(projector: Any) -> None:
    """Make the projector's next `apply` write its rows and then fail before its checkpoint is stored.

    LanceDB projections commit rows first and the checkpoint file after (`_save_checkpoint` is their
    seam); SQLite projections write both in one transaction, so the crash comes after the batch is
    folded and before the checkpoint row and the commit."""
    if isinstance(projector, LanceProjection):
        async def save_checkpoint(ck: Any) -> None:
            raise SimulatedCrash("between the rows and the checkpoint")

        projector._save_checkpoint = save_checkpoint  # type: ignore[method-assign]
    elif isinstance(projector, SqliteProjection):
        fold_batch = projector._fold_batch

        def fold_then_crash(conn: Any, events: list[Event]) -> None:
            fold_batch(conn, events)
            raise SimulatedCrash("between the rows and the checkpoint")

        projector._fold_batch = fold_then_crash  # type: ignore[method-assign]
    else:
        pytest.fail(f"{type(projector).__name__}: no crash seam for its storage base; add one here")


def unknown(i: int) -> Event:
    return Event(type="future.contract-test", data=UnknownPayload({"i": i}), ns="shared", agent="contract")


async def test_the_registry_builds_one_projector_per_name(embedder: HashEmbedder, tmp_path: Path) -> None:
    projectors = make_projectors(tmp_path, embedder)
    try:
        assert sorted(p.name for p in projectors) == sorted(NAMES)
        assert all(isinstance(p, Projector) for p in projectors)
    finally:
        for p in projectors:
            await p.close()


@each_projector
async def test_a_crash_before_the_checkpoint_then_a_restart_counts_nothing_twice(
        name: str, store: EventStore, log: list[Event], opened, tmp_path: Path) -> None:
    clean = await opened(tmp_path / "clean")
    await fold(store, clean)
    expected = await clean.digest()

    half = len(log) // 2
    first, second = log[:half], log[half:]
    crashy = await opened(tmp_path / "live")
    await crashy.apply(first)
    before = await crashy.digest()
    assert before != expected, "the crashed batch must change this projection, or the test proves nothing"
    crash_before_checkpoint(crashy)
    with pytest.raises(SimulatedCrash):
        await crashy.apply(second)
    assert await crashy.load_checkpoint() == first[-1].position
    assert await crashy.digest() == before  # the digest is as of the checkpoint
    await crashy.close()

    restarted = await opened(tmp_path / "live")
    runner = await fold(store, restarted)
    assert runner.checkpoint == log[-1].position
    assert runner.events_applied == len(second)  # re-applied from the old checkpoint
    assert await restarted.digest() == expected


@each_projector
async def test_unknown_event_types_advance_the_checkpoint_and_change_nothing(
        name: str, store: EventStore, log: list[Event], opened, tmp_path: Path) -> None:
    empty = await (await opened(tmp_path / "empty")).digest()

    # alone: on a projection that has nothing yet
    res = await store.append([unknown(1)])
    alone = await opened(tmp_path / "alone")
    await alone.apply(await store.read(log[-1].position))
    assert await alone.load_checkpoint() == res.positions[-1]
    assert await alone.digest() == empty

    # after the whole log: the digest of the folded log, the checkpoint at the unknown events
    folded = await opened(tmp_path / "folded")
    await folded.apply(log)
    digest = await folded.digest()
    res = await store.append([unknown(2), unknown(3)])
    runner = await fold(store, folded)
    assert runner.events_applied == 3 and runner.checkpoint == res.positions[-1]
    assert await folded.load_checkpoint() == res.positions[-1]
    assert await folded.digest() == digest != empty


@each_projector
async def test_folding_the_same_log_twice_gives_the_same_digest(
        name: str, store: EventStore, log: list[Event], opened, tmp_path: Path) -> None:
    empty = await (await opened(tmp_path / "empty")).digest()
    small = await opened(tmp_path / "small-batches")
    await fold(store, small, batch_size=3)
    digest = await small.digest()
    assert digest != empty  # the fixture log holds rows for every projection

    whole = await opened(tmp_path / "one-batch")
    await fold(store, whole, batch_size=len(log))
    assert await whole.digest() == digest

    await small.apply(log)  # the whole log delivered again
    assert await small.digest() == digest and await small.load_checkpoint() == log[-1].position
    await small.close()
    reopened = await opened(tmp_path / "small-batches")
    await reopened.apply(log[: len(log) // 3])  # an older prefix, to a new writer
    assert await reopened.digest() == digest and await reopened.load_checkpoint() == log[-1].position


@each_projector
async def test_the_event_types_a_projector_ignores_change_nothing(
        name: str, store: EventStore, log: list[Event], opened, tmp_path: Path) -> None:
    """`Skipping.ignored_types` lets the runner skip batches of those types (no apply): folding them must
    change no row, which folding the log with and without them shows."""
    projector = await opened(tmp_path / "all")
    ignored = getattr(projector, "ignored_types", frozenset())
    if not ignored:
        assert name in ("activity", "graph", "metrics"), f"{name} folds recall.served?"
        return
    assert isinstance(projector, Skipping)
    dropped = [e for e in log if e.type in ignored]
    assert dropped, f"the fixture log holds none of {sorted(ignored)}: the test proves nothing"
    for e in log:   # applied one by one: the ignored events on their own as well
        await projector.apply([e])
    without = await opened(tmp_path / "without")
    for e in log:
        if e.type not in ignored:
            await without.apply([e])
    assert await projector.digest() == await without.digest()


@each_projector
async def test_a_checkpoint_moved_past_ignored_events_is_stored_by_advance(
        name: str, store: EventStore, log: list[Event], opened, tmp_path: Path) -> None:
    fresh = await opened(tmp_path / "fresh")
    if not isinstance(fresh, Skipping):
        return
    empty = await fresh.digest()
    first = await store.append([new_event(RecallServed("q", ("shared",), (), ()), ns="shared", agent="contract")])
    await fresh.advance(first.position)   # nothing applied yet: the checkpoint alone
    assert await fresh.load_checkpoint() == first.position and await fresh.digest() == empty

    projector = await opened(tmp_path / "p")
    await fold(store, projector)
    digest = await projector.digest()
    await projector.advance(log[5].position)   # behind the stored checkpoint: it never moves back
    assert await projector.load_checkpoint() == first.position
    res = await store.append([new_event(RecallServed("q", ("shared",), (), ()), ns="shared", agent="contract")])
    await projector.advance(res.position)
    assert await projector.load_checkpoint() == res.position and await projector.digest() == digest


@each_projector
async def test_sqlite_projections_copy_their_wal_back_every_wal_autocheckpoint_pages(
        name: str, store: EventStore, log: list[Event], opened, tmp_path: Path) -> None:
    from projections.core.sqlite_projection import WAL_AUTOCHECKPOINT

    projector = await opened(tmp_path / "p")
    if not isinstance(projector, SqliteProjection):
        return
    await fold(store, projector)
    assert projector._conn is not None
    assert projector._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == WAL_AUTOCHECKPOINT > 1000
