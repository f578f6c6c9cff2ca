"""Taking a backup, in two steps so that `POST /api/v1/admin/backup` can answer once the position is
fixed and write the archive in the background:

1. `prepare`: under the backup directory's lock, copy the live projections (full backups, when the
   data dir holds projections of this log), then read the log's state: its last position P (at or
   after every copy's checkpoint, since the copies were taken first), epoch, HLC and reactions.
2. `write`: export the log up to P into chunks, add the embedding cache and the projection copies,
   the manifest last; fsync, rename into place, release the lock.
"""

from __future__ import annotations

import asyncio
import fcntl
import gzip
import hashlib
import io
import os
import shutil
import tarfile
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import structlog
from events.redis.client import Redis

from events.redis.log_export import Entry, LogState, log_state, read_log
from gateway.backup.archive import (CHUNK_EVENTS, EMBEDDINGS, FULL, INCREMENTAL, MANIFEST, PROJECTIONS, Archive,
                                    BackupBusy, BackupError, archives)
from projections.core.epoch import load_epoch
from projections.core.registry import projections_root
from projections.core.snapshot import ProjectionCopy, take_snapshot
from projections.models.embedding_cache import export_blobs

log = structlog.get_logger(__name__)

LOCK_FILE = ".backup.lock"


@dataclass(slots=True)
class PreparedBackup:
    backup_id: str
    kind: str
    base: Archive | None
    state: LogState
    created: datetime
    directory: Path
    lock_fd: int
    snapshot: Path | None = None                      # the projection copies (removed by `write`)
    copies: list[ProjectionCopy] = field(default_factory=list)
    skipped: str | None = None                        # why the projections are not in the archive

    @property
    def position(self) -> str:
        assert self.state.position is not None
        return self.state.position

    @property
    def path(self) -> Path:
        return self.directory / f"{self.backup_id}.tar"

    def reply(self) -> dict[str, Any]:
        return {"backup_id": self.backup_id, "kind": self.kind, "position": self.position, "path": str(self.path)}

    def discard(self) -> None:
        if self.snapshot is not None:
            shutil.rmtree(self.snapshot, ignore_errors=True)
            self.snapshot = None
        if self.lock_fd >= 0:
            os.close(self.lock_fd)          # releases the flock
            self.lock_fd = -1


def _lock(directory: Path) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise BackupBusy(f"another backup is being written into {directory}") from None
    return fd


async def prepare(redis: Redis, directory: Path, data_dir: Path | None, *, incremental: bool) -> PreparedBackup:
    """Fix what the archive will hold (see the module doc). Raises BackupError / BackupBusy."""
    fd = _lock(directory)
    prepared: PreparedBackup | None = None
    try:
        before = await log_state(redis)
        if before.position is None:
            raise BackupError("the log is empty: nothing to back up")
        base: Archive | None = None
        if incremental:
            found = await asyncio.to_thread(archives, directory)
            if not found:
                raise BackupError(f"--incremental needs a base: there is no archive in {directory}")
            base = found[-1]
            if base.manifest["epoch"] != before.epoch:
                raise BackupError(f"the newest archive {base.path.name} is of another log (epoch "
                                  f"{base.manifest['epoch']}, the log's is {before.epoch}): make a full backup")
        prepared = PreparedBackup("", INCREMENTAL if base else FULL, base, before, datetime.now(timezone.utc),
                                  directory, fd)
        if base is None:
            await _copy_projections(prepared, data_dir)
        state = await log_state(redis)        # after the copies: P is at or after each one's checkpoint
        if state.epoch != before.epoch or state.position is None:
            raise BackupError("the log was replaced while the backup started (its epoch changed): try again")
        prepared.state = state
        prepared.backup_id = (f"zhiyi-{prepared.created:%Y%m%dT%H%M%SZ}-{'incr' if base else 'full'}-"
                              f"{state.position}")
        if prepared.path.exists():
            raise BackupError(f"{prepared.path} exists already")
        return prepared
    except BaseException:
        if prepared is not None:
            prepared.discard()
        else:
            os.close(fd)
        raise


async def _copy_projections(prepared: PreparedBackup, data_dir: Path | None) -> None:
    if data_dir is None or not projections_root(data_dir).is_dir():
        prepared.skipped = "no projections in the data dir"
        return
    recorded = load_epoch(data_dir)
    if recorded != prepared.state.epoch:
        prepared.skipped = f"the data dir's projections are of another log (epoch {recorded})"
        return
    prepared.snapshot = Path(data_dir) / f".backup-{uuid.uuid4().hex[:12]}"
    started = time.monotonic()
    prepared.copies = await take_snapshot(Path(data_dir), prepared.snapshot)
    log.info("backup.projections_copied", ms=round((time.monotonic() - started) * 1000, 1),
             copies={c.name: c.kind for c in prepared.copies})


def _chunk_bytes(entries: list[Entry]) -> bytes:
    lines = b"".join(orjson.dumps({"id": pos, "fields": [[k, v] for k, v in fields]}) + b"\n"
                     for pos, fields in entries)
    return gzip.compress(lines, compresslevel=6, mtime=0)


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
    tar.addfile(info, io.BytesIO(data))


class _Hashing:
    """A file read by tarfile, hashed on the way (each file is read once)."""

    def __init__(self, fh: Any) -> None:
        self.fh, self.digest = fh, hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        block = self.fh.read(size)
        self.digest.update(block)
        return block


def _add_file(tar: tarfile.TarFile, path: Path, name: str) -> dict[str, Any]:
    info = tar.gettarinfo(path, name)
    with open(path, "rb") as fh:
        reader = _Hashing(fh)
        tar.addfile(info, reader)   # type: ignore[arg-type]
    return {"name": name, "bytes": info.size, "sha256": reader.digest.hexdigest()}


def _add_tree(tar: tarfile.TarFile, root: Path, prefix: str) -> list[dict[str, Any]]:
    rows = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder) / name
            rows.append(_add_file(tar, path, f"{prefix}/{path.relative_to(root).as_posix()}"))
    return rows


async def write(redis: Redis, prepared: PreparedBackup, embedding_cache: Path | None) -> dict[str, Any]:
    """Write the prepared archive; always releases the lock and removes the copies."""
    try:
        return await _write(redis, prepared, embedding_cache)
    finally:
        prepared.discard()


async def _write(redis: Redis, prepared: PreparedBackup, embedding_cache: Path | None) -> dict[str, Any]:
    directory, base = prepared.directory, prepared.base
    from_position = str(base.manifest["position"]) if base else ""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{prepared.backup_id}.", suffix=".tmp", dir=directory)
    os.close(fd)
    tmp = Path(tmp_name)
    started = time.monotonic()
    try:
        chunks: list[dict[str, Any]] = []
        files: list[dict[str, Any]] = []
        with tarfile.open(tmp, "w:", format=tarfile.PAX_FORMAT) as tar:
            pending: list[Entry] = []

            def flush() -> None:
                name = f"log/{len(chunks) + 1:06d}.jsonl.gz"
                data = _chunk_bytes(pending)
                _add_bytes(tar, name, data)
                chunks.append({"name": name, "first": pending[0][0], "last": pending[-1][0],
                               "events": len(pending), "sha256": hashlib.sha256(data).hexdigest()})
                pending.clear()

            async for batch in read_log(redis, from_position or None, prepared.position):
                for entry in batch:
                    pending.append(entry)
                    if len(pending) >= CHUNK_EVENTS:
                        await asyncio.to_thread(flush)
            if pending:
                flush()
            embeddings = base is None and embedding_cache is not None and embedding_cache.exists()
            if embeddings:
                assert embedding_cache is not None
                with tempfile.TemporaryDirectory(dir=directory) as scratch:
                    copy = Path(scratch) / EMBEDDINGS
                    await asyncio.to_thread(export_blobs, embedding_cache, copy)   # one self-contained file
                    files.append(await asyncio.to_thread(_add_file, tar, copy, EMBEDDINGS))
            if prepared.snapshot is not None:
                files += await asyncio.to_thread(_add_tree, tar, prepared.snapshot / PROJECTIONS, PROJECTIONS)
            manifest = {
                "backup_id": prepared.backup_id, "kind": prepared.kind, "base": base.backup_id if base else None,
                "from_position": from_position, "position": prepared.position, "epoch": prepared.state.epoch,
                "hlc": prepared.state.hlc, "reactions": prepared.state.reactions,
                "events": sum(c["events"] for c in chunks),
                "created_at": prepared.created.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                "version": _version(), "embeddings": embeddings, "chunks": chunks,
                "projections": [{"name": c.name, "kind": c.kind, "position": c.position} for c in prepared.copies],
                "projections_skipped": prepared.skipped if base is None else None,
                "files": files,
            }
            _add_bytes(tar, MANIFEST, orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, prepared.path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    result = {**prepared.reply(), "events": manifest["events"], "bytes": prepared.path.stat().st_size,
              "projections": sum(1 for c in prepared.copies if c.kind in ("sqlite", "lance")),
              "projections_skipped": prepared.skipped,
              "seconds": round(time.monotonic() - started, 3)}
    log.info("backup.written", **result)
    return result


async def backup(redis: Redis, directory: Path, data_dir: Path | None, embedding_cache: Path | None, *,
                 incremental: bool) -> dict[str, Any]:
    """Both steps (the CLI)."""
    prepared = await prepare(redis, directory, data_dir, incremental=incremental)
    return await write(redis, prepared, embedding_cache)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("zhiyi")
    except PackageNotFoundError:
        return "unknown"
