"""`zhiyi backup --prune`: delete the archives of a directory that retention does not keep
(`gateway.cli.backup_retention`)."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import orjson

from gateway.backup.archive import BackupError, archives
from gateway.cli.backup_retention import Kept, keep


def prune(directory: Path, as_json: bool) -> int:
    """Delete the archives retention does not keep (gateway.cli.backup_retention)."""
    try:
        found = archives(directory)
    except BackupError as exc:
        print(f"zhiyi backup --prune: {exc}", file=sys.stderr)
        return 2
    records = [Kept(a.backup_id, datetime.fromisoformat(str(a.manifest["created_at"]).replace("Z", "+00:00")),
                    str(a.manifest.get("base") or "")) for a in found]
    kept = keep(records, datetime.now(timezone.utc))
    deleted = [a for a in found if a.backup_id not in kept]
    for a in deleted:
        a.path.unlink(missing_ok=True)
    result = {"directory": str(directory), "kept": sorted(kept), "deleted": [a.backup_id for a in deleted]}
    print(orjson.dumps(result).decode() if as_json else
          f"kept {len(kept)} archives, deleted {len(deleted)} in {directory}")
    return 0
