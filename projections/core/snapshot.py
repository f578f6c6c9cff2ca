"""Copies of the live projections for a backup, each with the log position it holds (its checkpoint),
so that a restore folds each copy on from there instead of folding the whole log again.

- SQLite projections: sqlite3's backup API, one consistent snapshot whose `checkpoint` table is
  written in the same transactions as the rows.
- LanceDB projections: hard links (copies where the file system refuses links) of every file,
  `checkpoint.json` first. Lance never rewrites a data file or a version's manifest, so the links
  hold the table as of every version present, the checkpointed one included, whatever the live
  writer does next; commits made after that checkpoint are rolled back by the first writer of the
  restored copy (LanceProjection._recover). The one race: the checkpointed version pruned (older
  than the retention and no longer the latest) between reading the checkpoint and linking its
  files. So the copy is read back at its checkpointed version, and taken again when it cannot be.

Nothing here writes to a live projection or waits for its writer; the file work runs in threads (a
gateway takes a backup without stalling its requests).
"""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import structlog

from projections.core import checkpoint as checkpoint_file
from projections.core.errors import ProjectionError
from projections.core.lance import WriterLock
from projections.core.lance_projection import LanceProjection
from projections.core.registry import make_projectors
from projections.core.sqlite_projection import SqliteProjection

log = structlog.get_logger(__name__)

SQLITE, LANCE, EMPTY, MISSING = "sqlite", "lance", "empty", "missing"
_SKIPPED = {WriterLock.FILENAME, checkpoint_file.FILENAME + ".tmp"}


@dataclass(frozen=True, slots=True)
class ProjectionCopy:
    name: str
    kind: str                 # sqlite | lance | empty (nothing projected yet) | missing (not copied)
    position: str | None      # the log position the copy holds


def copy_sqlite(src: Path, dst: Path) -> None:
    """A consistent copy of a live SQLite database (its writers may go on)."""
    source = sqlite3.connect(f"file:{src}?mode=ro", uri=True, timeout=30.0)
    try:
        target = sqlite3.connect(dst)
        try:
            source.backup(target)
        finally:
            target.close()
    finally:
        source.close()


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
        shutil.copy2(src, dst)


def _link_tree(src: Path, dst: Path) -> None:
    """`src` mirrored into `dst` (new) by links; its checkpoint first, files that vanish meanwhile skipped."""
    dst.mkdir(parents=True)
    if (src / checkpoint_file.FILENAME).exists():
        _link_or_copy(src / checkpoint_file.FILENAME, dst / checkpoint_file.FILENAME)
    for folder, _dirs, files in os.walk(src):
        rel = Path(folder).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            if rel == Path(".") and (name in _SKIPPED or name == checkpoint_file.FILENAME):
                continue
            try:
                _link_or_copy(Path(folder) / name, dst / rel / name)
            except FileNotFoundError:  # pruned meanwhile: the read-back below says if it was needed
                continue


async def _copy_lance(projector: LanceProjection, copy: LanceProjection, attempts: int) -> ProjectionCopy:
    """`copy` is the same projector over the destination directory, to read the copy back."""
    for attempt in range(1, attempts + 1):
        await asyncio.to_thread(shutil.rmtree, copy.directory, ignore_errors=True)
        await asyncio.to_thread(_link_tree, projector.directory, copy.directory)
        ck = checkpoint_file.load(copy.directory)
        if ck is None:
            return ProjectionCopy(projector.name, EMPTY, None)
        try:
            if await copy.readable_as_checkpointed():
                return ProjectionCopy(projector.name, LANCE, ck.position)
        finally:
            await copy.close()
        log.warning("snapshot.retry", projector=projector.name, attempt=attempt, version=ck.table_version)
    await asyncio.to_thread(shutil.rmtree, copy.directory, ignore_errors=True)
    return ProjectionCopy(projector.name, MISSING, None)


async def take_snapshot(data_dir: Path, into: Path, *, attempts: int = 3) -> list[ProjectionCopy]:
    """Copy every live projection of `data_dir` to `into/projections/<name>` (`into` on the same file
    system, for the links). A LanceDB copy that cannot be read back after `attempts` is left out
    (kind "missing": a restore folds that projection from the start)."""
    out: list[ProjectionCopy] = []
    copies = {p.name: p for p in make_projectors(Path(into), None)}
    for projector in make_projectors(Path(data_dir), None):
        copy = copies[projector.name]
        if isinstance(projector, SqliteProjection) and isinstance(copy, SqliteProjection):
            if not projector.path.exists():
                out.append(ProjectionCopy(projector.name, EMPTY, None))
                continue
            copy.directory.mkdir(parents=True)
            await asyncio.to_thread(copy_sqlite, projector.path, copy.path)
            try:
                position = await copy.load_checkpoint()
            finally:
                await copy.close()
            out.append(ProjectionCopy(projector.name, SQLITE if position else EMPTY, position))
        elif isinstance(projector, LanceProjection) and isinstance(copy, LanceProjection):
            if not projector.directory.exists():
                out.append(ProjectionCopy(projector.name, EMPTY, None))
                continue
            out.append(await _copy_lance(projector, copy, attempts))
        else:
            raise ProjectionError(f"{projector.name}: no way to copy this kind of projection")
    return out
