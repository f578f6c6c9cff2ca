"""`zhiyi backup` and `zhiyi restore`: the log (the only source of truth) archived and loaded back.

An archive is one tar file `<dir>/zhiyi-<UTC yyyymmddThhmmssZ>-<full|incr>-<P>.tar` (written under a
temporary name, then renamed), P being the log's last position when the backup started:

- `manifest.json`: backup_id, kind (full | incremental), base (an incremental's base backup: the
  newest archive of the directory), from_position (exclusive; "" for a full one), position (P),
  epoch, hlc, reactions, events, created_at, version, chunks [{name, first, last, events, sha256}];
- `log/000001.jsonl.gz`, ...: at most 10,000 entries each, one `{"id": ..., "fields": [[k, v], ...]}`
  a line (the original stream ids and raw fields, like tests/fixtures/event_log.jsonl);
- `embeddings.sqlite` (full backups, when the data dir has one): a consistent copy of the embedding
  cache (sqlite3's backup API), so a restore embeds nothing again.

A restore follows the chain of bases back to a full archive, checks every chunk's sha256 before
loading anything, loads the chain's log into an empty Redis (events.redis.log_loader), rebuilds the
write-side indexes, puts the embedding cache in place and rebuilds every projection of the data
dir from the restored log (projections.core.replay_in_place), then prints their digests.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import hashlib
import io
import os
import sqlite3
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import orjson

from events.redis.log_export import Entry

CHUNK_EVENTS = 10_000
MANIFEST = "manifest.json"
EMBEDDINGS = "embeddings.sqlite"
FULL, INCREMENTAL = "full", "incremental"


class BackupError(Exception):
    """The command cannot go on (one readable line; exit 2)."""


def add_backup_parsers(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    bp = sub.add_parser("backup", parents=parents,
                        help="archive the event log (and the embedding cache) into one tar file")
    bp.add_argument("--to", default=None, metavar="DIR",
                    help="directory of the archives (default ZHIYI_BACKUP_DIR, else <data-dir>/backups)")
    bp.add_argument("--incremental", action="store_true",
                    help="only the events after the newest archive of the directory (its base)")
    bp.add_argument("--prune", action="store_true",
                    help="take no backup: delete the archives retention does not keep (7 daily + 4 weekly, "
                         "and every base a kept incremental needs)")
    bp.add_argument("--json", action="store_true")
    bp.set_defaults(func=cmd_backup)
    rp = sub.add_parser("restore", parents=parents,
                        help="load an archive (and its bases) into an empty Redis, rebuild the projections")
    rp.add_argument("archive", help="the archive to restore (its bases are found in the same directory)")
    rp.add_argument("--force", action="store_true",
                    help="replace the log of a non-empty Redis (deleted) and the data dir's projections (kept aside)")
    rp.add_argument("--json", action="store_true")
    rp.set_defaults(func=cmd_restore)


def cmd_backup(args: argparse.Namespace) -> int:
    from gateway.cli.main import _redis_url, build_settings
    from gateway.process.settings import absolute_path

    if args.prune:
        from gateway.cli.backup_prune import prune

        return prune(absolute_path(args.to or args.env.backup_dir or Path(args.data_dir) / "backups"), args.json)
    settings = build_settings(args, _redis_url(args))
    target = absolute_path(args.to or args.env.backup_dir or settings.data_dir / "backups")
    try:
        result = asyncio.run(backup(settings.redis_url, target, settings.embedding_cache_path,
                                    incremental=args.incremental))
    except BackupError as exc:
        print(f"zhiyi backup: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(orjson.dumps(result).decode())
    else:
        print(f"{result['backup_id']}  kind={result['kind']}  position={result['position']}  "
              f"events={result['events']}  path={result['path']}  bytes={result['bytes']}")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from gateway.cli.main import _redis_url, build_settings
    from gateway.process.settings import absolute_path

    settings = build_settings(args, _redis_url(args))
    try:
        return asyncio.run(restore(settings, absolute_path(args.archive), force=args.force, as_json=args.json))
    except BackupError as exc:
        print(f"zhiyi restore: {exc}", file=sys.stderr)
        return 2


# ----------------------------------------------------------------------------- archives


@dataclass(frozen=True, slots=True)
class Archive:
    path: Path
    manifest: dict[str, Any]

    @property
    def backup_id(self) -> str:
        return str(self.manifest["backup_id"])


def read_manifest(path: Path) -> Archive:
    try:
        with tarfile.open(path, "r:") as tar:
            member = tar.extractfile(MANIFEST)
            if member is None:
                raise KeyError(MANIFEST)
            return Archive(path, orjson.loads(member.read()))
    except (OSError, KeyError, tarfile.TarError, orjson.JSONDecodeError) as exc:
        raise BackupError(f"{path}: not a readable zhiyi archive ({exc})") from None


def archives(directory: Path) -> list[Archive]:
    """The archives of a directory, oldest first (by position, then creation)."""
    found = [read_manifest(p) for p in sorted(directory.glob("zhiyi-*.tar"))] if directory.is_dir() else []
    from events import positions

    return sorted(found, key=lambda a: (positions.key(a.manifest["position"]), a.manifest["created_at"]))


def _chunk_bytes(entries: list[Entry]) -> bytes:
    lines = b"".join(orjson.dumps({"id": pos, "fields": [[k, v] for k, v in fields]}) + b"\n"
                     for pos, fields in entries)
    return gzip.compress(lines, compresslevel=6, mtime=0)


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
    tar.addfile(info, io.BytesIO(data))


def _copy_sqlite(src: Path, dst: Path) -> None:
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


async def backup(redis_url: str, directory: Path, embedding_cache: Path, *, incremental: bool) -> dict[str, Any]:
    from events.redis.client import connect
    from events.redis.log_export import log_state, read_log

    redis = connect(redis_url)
    try:
        state = await log_state(redis)
        if state.position is None:
            raise BackupError("the log is empty: nothing to back up")
        base: Archive | None = None
        if incremental:
            found = archives(directory)
            if not found:
                raise BackupError(f"--incremental needs a base: there is no archive in {directory}")
            base = found[-1]
            if base.manifest["epoch"] != state.epoch:
                raise BackupError(f"the newest archive {base.path.name} is of another log (epoch "
                                  f"{base.manifest['epoch']}, the log's is {state.epoch}): make a full backup")
        kind = INCREMENTAL if base else FULL
        created = datetime.now(timezone.utc)
        backup_id = f"zhiyi-{created:%Y%m%dT%H%M%SZ}-{'incr' if base else 'full'}-{state.position}"
        directory.mkdir(parents=True, exist_ok=True)
        final = directory / f"{backup_id}.tar"
        if final.exists():
            raise BackupError(f"{final} exists already")
        from_position = str(base.manifest["position"]) if base else ""
        fd, tmp_name = tempfile.mkstemp(prefix=f".{backup_id}.", suffix=".tmp", dir=directory)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            chunks: list[dict[str, Any]] = []
            with tarfile.open(tmp, "w:", format=tarfile.PAX_FORMAT) as tar:
                pending: list[Entry] = []

                def flush() -> None:
                    name = f"log/{len(chunks) + 1:06d}.jsonl.gz"
                    data = _chunk_bytes(pending)
                    _add_bytes(tar, name, data)
                    chunks.append({"name": name, "first": pending[0][0], "last": pending[-1][0],
                                   "events": len(pending), "sha256": hashlib.sha256(data).hexdigest()})
                    pending.clear()

                async for batch in read_log(redis, from_position or None, state.position):
                    for entry in batch:
                        pending.append(entry)
                        if len(pending) >= CHUNK_EVENTS:
                            flush()
                if pending:
                    flush()
                if not base and embedding_cache.exists():
                    with tempfile.TemporaryDirectory(dir=directory) as scratch:
                        copy = Path(scratch) / EMBEDDINGS
                        await asyncio.to_thread(_copy_sqlite, embedding_cache, copy)
                        tar.add(copy, EMBEDDINGS)
                manifest = {
                    "backup_id": backup_id, "kind": kind, "base": base.backup_id if base else None,
                    "from_position": from_position, "position": state.position, "epoch": state.epoch,
                    "hlc": state.hlc, "reactions": state.reactions, "events": sum(c["events"] for c in chunks),
                    "created_at": created.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                    "version": _version(), "embeddings": (not base) and embedding_cache.exists(),
                    "chunks": chunks,
                }
                _add_bytes(tar, MANIFEST, orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, final)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        return {"backup_id": backup_id, "kind": kind, "position": state.position, "events": manifest["events"],
                "path": str(final), "bytes": final.stat().st_size}
    finally:
        await redis.aclose()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("zhiyi")
    except PackageNotFoundError:
        return "unknown"


# ----------------------------------------------------------------------------- restore


def chain(archive: Path) -> list[Archive]:
    """The archive and its bases, the full one first; positions checked contiguous."""
    out = [read_manifest(archive)]
    while out[0].manifest.get("base"):
        base_id = out[0].manifest["base"]
        path = archive.parent / f"{base_id}.tar"
        if not path.exists():
            raise BackupError(f"{out[0].path.name}: its base archive {base_id}.tar is not in {archive.parent}")
        base = read_manifest(path)
        if base.backup_id != base_id:
            raise BackupError(f"{path}: holds backup {base.backup_id}, not {base_id}")
        if out[0].manifest["from_position"] != base.manifest["position"]:
            raise BackupError(f"{out[0].path.name} starts after {out[0].manifest['from_position']}, but its base "
                              f"{path.name} ends at {base.manifest['position']}: not contiguous")
        if out[0].manifest["epoch"] != base.manifest["epoch"]:
            raise BackupError(f"{out[0].path.name} and its base {path.name} are of different logs (epochs)")
        out.insert(0, base)
        if len(out) > 10_000:
            raise BackupError(f"{archive.name}: the chain of bases does not end")
    if out[0].manifest["kind"] != FULL or out[0].manifest["from_position"]:
        raise BackupError(f"{out[0].path.name}: the chain does not start with a full backup")
    return out


def verify(archive: Archive) -> None:
    """Every chunk of the manifest present with its sha256; else BackupError naming archive and chunk."""
    with tarfile.open(archive.path, "r:") as tar:
        names = set(tar.getnames())
        for chunk in archive.manifest["chunks"]:
            if chunk["name"] not in names:
                raise BackupError(f"{archive.path.name}: chunk {chunk['name']} is missing")
            member = tar.extractfile(chunk["name"])
            data = member.read() if member is not None else b""
            if hashlib.sha256(data).hexdigest() != chunk["sha256"]:
                raise BackupError(f"{archive.path.name}: chunk {chunk['name']} is corrupt (sha256 differs)")


def entries(archive: Archive) -> Iterator[list[Entry]]:
    """The archive's log, chunk by chunk (each checked against its manifest row)."""
    with tarfile.open(archive.path, "r:") as tar:
        for chunk in archive.manifest["chunks"]:
            member = tar.extractfile(chunk["name"])
            data = member.read() if member is not None else b""
            if hashlib.sha256(data).hexdigest() != chunk["sha256"]:   # changed since verified
                raise BackupError(f"{archive.path.name}: chunk {chunk['name']} is corrupt (sha256 differs)")
            rows = [orjson.loads(line) for line in gzip.decompress(data).splitlines() if line]
            out: list[Entry] = [(r["id"], [(k, v) for k, v in r["fields"]]) for r in rows]
            if len(out) != chunk["events"] or not out or out[0][0] != chunk["first"] or out[-1][0] != chunk["last"]:
                raise BackupError(f"{archive.path.name}: chunk {chunk['name']} does not hold what the manifest says")
            yield out


async def restore(settings: Any, archive: Path, *, force: bool, as_json: bool) -> int:
    from events.redis import keys
    from events.redis.log_loader import load_log
    from gateway.cli.maintenance import _print, _rows
    from gateway.process.wiring import open_services
    from projections.core.registry import projections_root
    from projections.core.replay_in_place import rebuild_in_place

    started = time.monotonic()
    archs = chain(archive)
    for a in archs:               # nothing is loaded before every chunk of the chain is known good
        verify(a)
    target = archs[-1].manifest
    data_dir = Path(settings.data_dir)
    live = projections_root(data_dir)
    if live.exists() and any(live.iterdir()) and not force:
        raise BackupError(f"{live} holds projections: restore into a fresh data dir (or --force: they are kept "
                          "aside)")
    async with open_services(settings, origin="restore") as services:
        redis = services.store.redis
        length = int(await redis.xlen(keys.STREAM)) if not force else 0
        if length:
            raise BackupError(f"the Redis at {_redact(settings.redis_url)} already holds a log ({length} events): "
                              "restore into an empty one (or --force: that log is deleted)")

        def chunks() -> Iterator[list[Entry]]:
            for a in archs:
                yield from entries(a)

        loaded = await load_log(redis, chunks(), epoch=target["epoch"], hlc=target["hlc"], force=force,
                                reactions=target.get("reactions"))
        await services.store.rebuild_indexes()
        cache_restored = _restore_cache(archs[0], Path(settings.embedding_cache_path))  # before the model opens it
        if live.exists() and any(live.iterdir()):   # --force: the data dir's projections are kept aside
            os.rename(live, live.with_name(f"{live.name}.before-restore-{int(time.time())}"))
        elif live.exists():
            live.rmdir()
        done = await rebuild_in_place(services.store, data_dir, services.embedder)
    elapsed = time.monotonic() - started
    if as_json:
        print(orjson.dumps({"archive": str(archive), "chain": [a.backup_id for a in archs],
                            "position": loaded.position, "events": loaded.events, "epoch": done.epoch,
                            "embeddings_restored": cache_restored, "seconds": round(elapsed, 3),
                            "projections": _rows(done.digests)}).decode())
    else:
        print(f"restored {loaded.events} events up to {loaded.position} (epoch {done.epoch}) from "
              f"{' + '.join(a.path.name for a in archs)} in {elapsed:.1f} s"
              + ("; embedding cache restored" if cache_restored else ""))
        _print(done.digests, f"live projections in {data_dir.resolve()}:", False)
    return 0


def _restore_cache(full: Archive, cache: Path) -> bool:
    """The full archive's embedding cache put in place, unless the data dir has one."""
    if not full.manifest.get("embeddings") or cache.exists():
        return False
    cache.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(full.path, "r:") as tar:
        member = tar.extractfile(EMBEDDINGS)
        if member is None:
            return False
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            while block := member.read(1 << 20):
                fh.write(block)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, cache)
    return True


def _redact(url: str) -> str:
    from gateway.process.embedded_redis import redact

    return redact(url)
