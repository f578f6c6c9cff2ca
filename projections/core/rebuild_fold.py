"""Folding projectors from the log for a rebuild (`projections.core.replay`): one runner per projector,
no checkpoint published, the projectors that start at the same checkpoint and stop at the same position
reading each batch once between them (`SharedReads`)."""

from __future__ import annotations

import asyncio
import gc
import math
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass

import structlog

from events.envelope import Event
from events.redis.store import EventStore
from projections.core.heap import give_back_freed_memory
from projections.core.projector import Maintainable, Projector
from projections.core.runner import ProjectionRunner
from projections.core.shared_reads import Read, SharedReads

log = structlog.get_logger(__name__)

REBUILD_BATCH = 10_000  # offline: big batches amortise per-write costs (a LanceDB version, a transaction): -20% CPU vs 2,000

GC_THRESHOLD = 50_000   # allocations between two collections of the youngest generation during a fold

Until = str | None | dict[str, str | None]


@dataclass(frozen=True, slots=True)
class ProjectionDigest:
    name: str
    digest: str
    position: str | None
    events: int | None = None  # events folded by a rebuild; None for a live projection


async def fold_one(store: EventStore, projector: Projector, until: str | None,
                   batch_size: int = REBUILD_BATCH, epoch: str | None = None,
                   shared: Read | None = None) -> ProjectionDigest:
    """Fold one projector from its checkpoint up to `until` (inclusive) or the end, then `maintain`
    it (a compact table left behind; the digest is unchanged) and digest it."""
    runner = ProjectionRunner(store, projector, publish=False, maintain_every_s=math.inf, batch_size=batch_size,
                              epoch=epoch)
    position = await runner.catch_up(until, shared=shared)
    if runner.events_applied and isinstance(projector, Maintainable):
        await projector.maintain()
        await asyncio.to_thread(give_back_freed_memory)
    return ProjectionDigest(projector.name, await projector.digest(), position, runner.events_applied)


async def fold_projectors(store: EventStore, projectors: list[Projector], until: Until, batch_size: int,
                          epoch: str | None) -> dict[str, ProjectionDigest]:
    """Fold `projectors`, each from its own checkpoint up to `until` (one position for all, or a
    {name: position} map where None means "fold nothing"); the projectors of one (checkpoint, target)
    fold side by side on shared reads. Their digests, by name."""
    with fewer_collections():
        return await _fold_projectors(store, projectors, until, batch_size, epoch)


async def _fold_projectors(store: EventStore, projectors: list[Projector], until: Until, batch_size: int,
                           epoch: str | None) -> dict[str, ProjectionDigest]:
    out: dict[str, ProjectionDigest] = {}
    groups: dict[tuple[str | None, str | None], list[Projector]] = {}
    for p in projectors:
        target = until.get(p.name) if isinstance(until, dict) else until
        if isinstance(until, dict) and target is None:   # its live counterpart has applied nothing yet
            out[p.name] = ProjectionDigest(p.name, await p.digest(), None, 0)
            continue
        groups.setdefault((await p.load_checkpoint(), target), []).append(p)
    for (_, target), group in groups.items():
        for d in await _fold_group(store, group, target, batch_size, epoch):
            out[d.name] = d
    return out


async def _fold_group(store: EventStore, group: list[Projector], until: str | None, batch_size: int,
                      epoch: str | None) -> list[ProjectionDigest]:
    async def read(after: str | None) -> list[Event]:
        await asyncio.to_thread(give_back_freed_memory)
        return await store.read_checked(after, epoch, until, batch_size)

    shared = SharedReads(read, len(group))
    async with first_error(), asyncio.TaskGroup() as tasks:
        folds = [tasks.create_task(fold_one(store, p, until, batch_size, epoch, shared.reader(i)))
                 for i, p in enumerate(group)]
    out = [f.result() for f in folds]
    for d in out:
        log.info("replay.rebuilt", projector=d.name, position=d.position, events=d.events, digest=d.digest)
    return out


@asynccontextmanager
async def first_error() -> AsyncIterator[None]:
    """Raise a task group's first error itself (callers handle a LogResetError, not an ExceptionGroup);
    the group has cancelled the other tasks already."""
    try:
        yield
    except BaseExceptionGroup as group:
        raise group.exceptions[0] from None


@contextmanager
def fewer_collections(threshold: int = GC_THRESHOLD) -> Iterator[None]:
    """Python's cyclic collector, tuned for a fold: what is alive when it starts (modules, the loaded
    libraries: about a million objects) is frozen out of its scans, and young objects are collected
    every `threshold` allocations instead of 700. A fold allocates ~100 containers per event, almost
    none in cycles (reference counting frees them); with the defaults the full scans alone took
    ~15-30% of a rebuild's CPU."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(threshold, 20, 20)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
