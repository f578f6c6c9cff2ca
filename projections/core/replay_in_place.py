"""`zhiyi replay --in-place`: the recovery from a wiped or replaced log (`log_reset`).

Every projection is rebuilt from the current log beside the live ones (`<data>/.rebuild-<epoch>/`),
then swapped in: the live `projections/` folder is renamed `projections.<its epoch>/` (kept, never
deleted: it holds what the lost log had projected) and the rebuilt one takes its place, recording
the log's epoch. A running `zhiyi up` notices the projections now match the log and serves again:
the gateway reopens its readers, the projector process reopens its projectors and folds on.

Before the swap it takes the writer locks (`.writer.lock`) of the live LanceDB projections, which
write by path: a projector of the running zhiyi that has not yet seen the new epoch (it checks before
every read) finishes its batch and releases them first, so nothing of the old log is written into
the swapped-in folder. The swap is two renames of sibling folders on one file system; a crash
between them leaves the rebuilt folder in `.rebuild-<epoch>/` and no `projections/` (run the command
again: it rebuilds).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from events.redis.store import EventStore
from projections.core.epoch import load_epoch
from projections.core.errors import ProjectionBusy, ProjectionError, RebuildRequired
from projections.core.lance import WriterLock
from projections.core.lance_projection import LanceProjection
from projections.core.rebuild_process import SecondProcess
from projections.core.registry import make_projectors, projections_root
from projections.core.replay import REBUILD_BATCH, ProjectionDigest, rebuild

log = structlog.get_logger(__name__)


class NothingToReset(ProjectionError):
    """The live projections already come from the current log."""


@dataclass(frozen=True, slots=True)
class InPlaceResult:
    epoch: str                        # the log's epoch, now recorded by the live projections
    previous_epoch: str | None        # the epoch the replaced projections carried (None: none recorded)
    kept: Path | None                 # where the replaced projections are now (None: there were none)
    digests: dict[str, ProjectionDigest]


def outdated(data_dir: Path, embedder: Any) -> list[str]:
    """Why the live projections of `data_dir` cannot be folded on by this build (one message per
    projection built with an older schema or another model); [] when they can. Reads checkpoint
    files only."""
    problems = []
    for projector in make_projectors(Path(data_dir), embedder):
        if isinstance(projector, LanceProjection):
            try:
                projector.check_build()
            except RebuildRequired as exc:
                problems.append(str(exc))
    return problems


def _kept_name(data_dir: Path, previous: str | None) -> Path:
    base = data_dir / f"{projections_root(data_dir).name}.{previous or 'before-epochs'}"
    path, n = base, 1
    while path.exists():
        path, n = base.with_name(f"{base.name}.{n}"), n + 1
    return path


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


async def _writers_stopped(live: Path, wait_s: float) -> list[WriterLock]:
    """The writer locks of the live projections that write by path (LanceDB: a projector that has
    not yet noticed the reset would write its table and checkpoint into the swapped-in folder).
    A running zhiyi's projectors stop, and release them, on their next read after the epoch changed."""
    dirs = sorted(p.parent for p in live.glob(f"*/{WriterLock.FILENAME}")) if live.exists() else []
    locks = [WriterLock(d) for d in dirs]
    deadline = time.monotonic() + wait_s
    held: list[WriterLock] = []
    try:
        for lock in locks:
            while True:
                try:
                    lock.acquire()
                    held.append(lock)
                    break
                except ProjectionBusy:
                    if time.monotonic() > deadline:
                        raise ProjectionBusy(f"a projector still writes {lock.path.parent} after {wait_s:.0f} s: "
                                             "is a zhiyi of another log running on this data dir?") from None
                    await asyncio.sleep(0.1)
    except BaseException:
        for lock in held:
            lock.release()
        raise
    return held


async def rebuild_in_place(store: EventStore, data_dir: Path, embedder: Any, *,
                           batch_size: int = REBUILD_BATCH, writer_wait_s: float = 60.0,
                           second: SecondProcess | None = None) -> InPlaceResult:
    """Rebuild every projection of `data_dir` from the current log, then swap it in.

    A log with no epoch (wiped, or written before epochs) is given one first: this command is
    where a new log is accepted. Projections of the current log that this build cannot fold on (an
    older schema or another model: `outdated`) are rebuilt and swapped the same way. Raises
    NothingToReset when the projections already match the log and this build.
    """
    data_dir = Path(data_dir)
    epoch = await store.open_epoch(create=True, adopt=True)
    if epoch is None:  # only if the key vanished between the set and the read: another wipe
        raise ProjectionError("the log has no epoch (wiped again?): run the command again")
    previous = load_epoch(data_dir)
    if previous == epoch and not outdated(data_dir, embedder):
        raise NothingToReset(f"the projections in {projections_root(data_dir)} already come from the current log "
                             f"(epoch {epoch}): nothing to reset (`zhiyi replay --into DIR` rebuilds beside them)")
    staging = data_dir / f".rebuild-{epoch}"
    shutil.rmtree(staging, ignore_errors=True)  # an earlier attempt that did not finish
    digests = await rebuild(store, staging, embedder, batch_size=batch_size, second=second)
    # the published checkpoints described the replaced projections; the live runners publish anew
    # once they see the swapped-in folder (cleared before it, so never after they did)
    await store.clear_checkpoints()
    live = projections_root(data_dir)
    kept = None
    locks = await _writers_stopped(live, writer_wait_s)
    try:
        if live.exists():
            kept = _kept_name(data_dir, previous)
            os.rename(live, kept)
        os.rename(projections_root(staging), live)
        _fsync_dir(data_dir)
    finally:
        for lock in locks:
            lock.release()
    shutil.rmtree(staging, ignore_errors=True)
    log.info("replay.in_place", epoch=epoch, previous_epoch=previous, kept=str(kept) if kept else None)
    return InPlaceResult(epoch, previous, kept, digests)
