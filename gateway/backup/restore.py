"""`zhiyi restore`: an archive (and its chain of bases) back into an empty Redis and a data dir.

Every chunk and file of the chain is checked (sha256) before anything is loaded. The chain's log is
loaded into an empty Redis (events.redis.log_loader), the write-side indexes are rebuilt and the
embedding cache put in place. Then the projections: when the full archive holds copies of them
(projections.core.snapshot), each copy is put in place and folded on from its own checkpoint to the
restored position (`projections.core.replay.fold_on`); otherwise, or with `rebuild`, or when this
build cannot fold on them (another model, an older schema), every projection is rebuilt from the
restored log. The digests are printed either way (they are the same).
"""

from __future__ import annotations

import os
import shutil
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from events.redis.log_export import Entry
from gateway.backup.archive import EMBEDDINGS, PROJECTIONS, Archive, BackupError, chain, entries, verify


@dataclass(frozen=True, slots=True)
class Restored:
    chain: list[str]
    position: str
    events: int
    epoch: str
    embeddings_restored: bool
    projections_from_archive: bool
    why_rebuilt: str | None
    digests: dict[str, Any]           # name -> ProjectionDigest
    seconds: float
    load_seconds: float
    projection_seconds: float


async def restore(settings: Any, archive: Path, *, force: bool, rebuild: bool = False,
                  embedder: Any = None) -> Restored:
    """`embedder`: a loaded model to share (a benchmark's); else the settings choose one."""
    from events.redis import keys
    from events.redis.log_loader import load_log
    from gateway.process.wiring import open_services
    from projections.core.registry import projections_root

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
    async with open_services(settings, origin="restore", embedder=embedder) as services:
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
        if loaded.position is None:
            raise BackupError(f"{archive.name}: its chain holds no event")
        position = loaded.position
        await services.store.rebuild_indexes()
        cache_restored = _restore_cache(archs[0], Path(settings.embedding_cache_path))  # before the model opens it
        loaded_at = time.monotonic()
        if live.exists() and any(live.iterdir()):   # --force: the data dir's projections are kept aside
            os.rename(live, live.with_name(f"{live.name}.before-restore-{int(time.time())}"))
        elif live.exists():
            live.rmdir()
        why = "--rebuild" if rebuild else _unusable(archs[0])
        digests = None
        if why is None:
            digests, why = await _from_archive(services.store, archs[0], data_dir, services.embedder,
                                               position)
        if digests is None:
            from projections.core.replay_in_place import rebuild_in_place

            digests = (await rebuild_in_place(services.store, data_dir, services.embedder)).digests
        epoch = await services.store.log_epoch()
    done = time.monotonic()
    return Restored([a.backup_id for a in archs], position, loaded.events, epoch or "", cache_restored,
                    why is None, why, digests, round(done - started, 3), round(loaded_at - started, 3),
                    round(done - loaded_at, 3))


def _unusable(full: Archive) -> str | None:
    copies = full.archived_projections
    if not copies:
        return full.manifest.get("projections_skipped") or "the archive holds no projections"
    return None


async def _from_archive(store: Any, full: Archive, data_dir: Path, embedder: Any,
                        position: str) -> tuple[dict[str, Any] | None, str | None]:
    """The archived copies put in place and folded on to `position`: (digests, None); or (None, why)
    when this build cannot fold on them (nothing is left in the data dir then)."""
    from projections.core.registry import projections_root
    from projections.core.replay import fold_on
    from projections.core.replay_in_place import outdated

    staging = data_dir / f".restore-{full.backup_id}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        with tarfile.open(full.path, "r:") as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(f"{PROJECTIONS}/")]
            tar.extractall(staging, members=members, filter="data")
        problems = outdated(staging, embedder)
        if problems:
            return None, "; ".join(problems)
        digests = await fold_on(store, staging, embedder, position)
        os.rename(projections_root(staging), projections_root(data_dir))
        fd = os.open(data_dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return digests, None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


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

