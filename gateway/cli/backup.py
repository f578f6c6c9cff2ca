"""`zhiyi backup` and `zhiyi restore` (the archive format: gateway.backup.archive)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

import orjson

from gateway.backup.archive import BackupError


def add_backup_parsers(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    bp = sub.add_parser("backup", parents=parents,
                        help="archive the event log, the embedding cache and copies of the projections into one "
                             "tar file")
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
                        help="load an archive (and its bases) into an empty Redis, restore the projections")
    rp.add_argument("archive", help="the archive to restore (its bases are found in the same directory)")
    rp.add_argument("--force", action="store_true",
                    help="replace the log of a non-empty Redis (deleted) and the data dir's projections (kept aside)")
    rp.add_argument("--rebuild", action="store_true",
                    help="rebuild every projection from the restored log instead of folding on the archived copies")
    rp.add_argument("--json", action="store_true")
    rp.set_defaults(func=cmd_restore)


def backup_dir(args: argparse.Namespace, data_dir: Path) -> Path:
    from gateway.process.settings import absolute_path

    return absolute_path(args.to or args.env.backup_dir or Path(data_dir) / "backups")


def cmd_backup(args: argparse.Namespace) -> int:
    from gateway.cli.main import _redis_url, build_settings

    if args.prune:
        from gateway.cli.backup_prune import prune

        return prune(backup_dir(args, Path(args.data_dir)), args.json)
    settings = build_settings(args, _redis_url(args))
    try:
        result = asyncio.run(_backup(settings, backup_dir(args, settings.data_dir), args.incremental))
    except BackupError as exc:
        print(f"zhiyi backup: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(orjson.dumps(result).decode())
    else:
        print(f"{result['backup_id']}  kind={result['kind']}  position={result['position']}  "
              f"events={result['events']}  projections={result['projections']}  path={result['path']}  "
              f"bytes={result['bytes']}")
        if result["projections_skipped"]:
            print(f"  no projection copies ({result['projections_skipped']}): a restore of it rebuilds them from the log")
    return 0


async def _backup(settings: Any, directory: Path, incremental: bool) -> dict[str, Any]:
    from events.redis.client import connect
    from gateway.backup.writer import backup

    redis = connect(settings.redis_url)
    try:
        return await backup(redis, directory, Path(settings.data_dir), Path(settings.embedding_cache_path),
                            incremental=incremental)
    finally:
        await redis.aclose()


def cmd_restore(args: argparse.Namespace) -> int:
    from gateway.backup.restore import restore
    from gateway.cli.main import _redis_url, build_settings
    from gateway.cli.maintenance import _print, _rows
    from gateway.process.settings import absolute_path

    settings = build_settings(args, _redis_url(args))
    archive = absolute_path(args.archive)
    try:
        done = asyncio.run(restore(settings, archive, force=args.force, rebuild=args.rebuild))
    except BackupError as exc:
        print(f"zhiyi restore: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(orjson.dumps({
            "archive": str(archive), "chain": done.chain, "position": done.position, "events": done.events,
            "epoch": done.epoch, "embeddings_restored": done.embeddings_restored,
            "projections_from_archive": done.projections_from_archive, "rebuilt_because": done.why_rebuilt,
            "seconds": done.seconds, "load_seconds": done.load_seconds,
            "projection_seconds": done.projection_seconds, "projections": _rows(done.digests)}).decode())
        return 0
    how = ("folded on from the archived copies" if done.projections_from_archive
           else f"rebuilt from the log ({done.why_rebuilt})")
    print(f"restored {done.events} events up to {done.position} (epoch {done.epoch}) from "
          f"{' + '.join(done.chain)} in {done.seconds:.1f} s; projections {how}"
          + ("; embedding cache restored" if done.embeddings_restored else ""))
    _print(done.digests, f"live projections in {Path(settings.data_dir).resolve()}:", False)
    return 0
