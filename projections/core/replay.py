"""Replay: rebuild projections from the log, time travel (`until`), digests and verification.

Directories are *roots* as understood by `registry.make_projectors`: each projector lives in
`<root>/projections/<name>`. A rebuild refuses a root whose `projections/` is not empty, and
never publishes checkpoints to Redis (the live ones belong to the live projectors).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from events.redis.store import EventStore
from projections.core.epoch import save_epoch
from projections.core.errors import ProjectionError, RebuildTargetNotEmpty
from projections.core.projector import Projector
from projections.core.rebuild_process import AWAY, SecondProcess, fold_elsewhere
from projections.core.registry import make_projectors, projections_root
from projections.core.rebuild_fold import REBUILD_BATCH, ProjectionDigest, Until, first_error, fold_projectors

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class VerifyReport:
    ok: bool
    live: dict[str, ProjectionDigest]
    rebuilds: list[dict[str, ProjectionDigest]] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)


def _require_empty(root: Path) -> None:
    proj = projections_root(root)
    if proj.exists() and any(proj.iterdir()):
        raise RebuildTargetNotEmpty(f"{proj} is not empty: rebuild into a fresh directory")


async def rebuild(store: EventStore, directory: Path, embedder: Any,
                  until: Until = None, *,
                  batch_size: int = REBUILD_BATCH, second: SecondProcess | None = None) -> dict[str, ProjectionDigest]:
    """Fold the log from the start into fresh projectors under `directory`.

    `until` (inclusive) is one position for every projector, or a {name: position} map; a
    projector mapped to None folds nothing (its live counterpart has applied nothing yet).
    The log's epoch is checked before every read (a log wiped meanwhile fails the rebuild) and
    recorded with the projections (projections.core.epoch) when the log has one. `second`: fold the
    graph projection in a second process (`projections.core.rebuild_process`).
    """
    _require_empty(Path(directory))
    return await fold_on(store, directory, embedder, until, batch_size=batch_size, second=second)


async def fold_on(store: EventStore, directory: Path, embedder: Any,
                  until: Until = None, *,
                  batch_size: int = REBUILD_BATCH, second: SecondProcess | None = None) -> dict[str, ProjectionDigest]:
    """Fold the log into the projectors under `directory`, each from its own checkpoint (the start
    for a fresh one: `rebuild`; a restored copy's position for an archived one), as `rebuild` says."""
    epoch = await store.log_epoch()
    projectors = make_projectors(Path(directory), embedder, offline=True)
    away = ([p.name for p in projectors if p.name in AWAY]
            if second is not None and await store.length() >= second.min_events else [])
    try:
        if second is not None and away:
            async with first_error(), asyncio.TaskGroup() as tasks:
                there = tasks.create_task(fold_elsewhere(second, Path(directory), away, until, batch_size, epoch))
                here = tasks.create_task(fold_projectors(store, [p for p in projectors if p.name not in away], until,
                                                         batch_size, epoch))
            out = {**here.result(), **there.result()}
        else:
            out = await fold_projectors(store, projectors, until, batch_size, epoch)
    finally:
        for p in projectors:
            await p.close()
    out = {p.name: out[p.name] for p in projectors}   # the registry's order
    if epoch is not None:
        save_epoch(Path(directory), epoch)
    return out


async def _consistent(projector: Projector, attempts: int) -> ProjectionDigest:
    digest_at = getattr(projector, "digest_at", None)
    if digest_at is not None:  # it digests the table version its checkpoint names: consistent in one read
        await projector.load_checkpoint()  # its checks: another build's projection, a table behind its checkpoint
        digest, position = await digest_at()
        return ProjectionDigest(projector.name, digest, position)
    for _ in range(attempts):
        before = await projector.load_checkpoint()
        digest = await projector.digest()
        after = await projector.load_checkpoint()
        if before == after:
            return ProjectionDigest(projector.name, digest, before)
    raise ProjectionError(f"{projector.name}: checkpoint kept moving while digesting ({attempts} tries)")


async def live_digests(directory: Path, embedder: Any, *, attempts: int = 20) -> dict[str, ProjectionDigest]:
    """Digest + checkpoint of every live projection under `directory`, read consistently."""
    projectors = make_projectors(Path(directory), embedder)
    try:
        return {p.name: await _consistent(p, attempts) for p in projectors}
    finally:
        for p in projectors:
            await p.close()


async def verify(store: EventStore, live_dir: Path, scratch_dir: Path, embedder: Any, *,
                 keep_scratch: bool = False, second: SecondProcess | None = None) -> VerifyReport:
    """Live digests vs two independent rebuilds up to the live positions: ok iff all three agree."""
    live = await live_digests(live_dir, embedder)
    until = {name: d.position for name, d in live.items()}
    Path(scratch_dir).mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, ProjectionDigest]] = []
    dirs: list[Path] = []
    try:
        for label in ("a", "b"):
            target = Path(tempfile.mkdtemp(prefix=f"rebuild-{label}-", dir=scratch_dir))
            dirs.append(target)
            runs.append(await rebuild(store, target, embedder, until, second=second))
    finally:
        if not keep_scratch:
            for d in dirs:
                shutil.rmtree(d, ignore_errors=True)
    mismatches = []
    for name, ref in live.items():
        for i, run in enumerate(runs):
            got = run[name]
            if (got.digest, got.position) != (ref.digest, ref.position):
                mismatches.append(f"{name}: rebuild {i + 1} {got.digest[:12]}@{got.position} "
                                  f"!= live {ref.digest[:12]}@{ref.position}")
    report = VerifyReport(not mismatches, live, runs, mismatches)
    log.info("replay.verified", ok=report.ok, mismatches=mismatches)
    return report
