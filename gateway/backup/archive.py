"""The archive format and reading it back.

An archive is one tar file `<dir>/zhiyi-<UTC yyyymmddThhmmssZ>-<full|incr>-<P>.tar` (written under a
temporary name, then renamed), P being the log's last position when the backup took it:

- `manifest.json`: backup_id, kind (full | incremental), base (an incremental's base backup: the
  newest archive of the directory), from_position (exclusive; "" for a full one), position (P),
  epoch, hlc, reactions, events, created_at, version, chunks [{name, first, last, events, sha256}],
  projections [{name, kind, position}] and files [{name, bytes, sha256}] (full backups);
- `log/000001.jsonl.gz`, ...: at most 10,000 entries each, one `{"id": ..., "fields": [[k, v], ...]}`
  a line (the original stream ids and raw fields, like tests/fixtures/event_log.jsonl);
- `embeddings.sqlite` (full backups, when the data dir has one): a consistent copy of the embedding
  cache, so a restore embeds nothing again;
- `projections/<name>/...` (full backups taken where the projections live): a copy of each live
  projection as of its checkpoint (projections.core.snapshot), a position at or before P, so that
  a restore folds only the events after it.
"""

from __future__ import annotations

import gzip
import hashlib
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import orjson

from events.redis.log_export import Entry

CHUNK_EVENTS = 10_000
MANIFEST = "manifest.json"
EMBEDDINGS = "embeddings.sqlite"
PROJECTIONS = "projections"
FULL, INCREMENTAL = "full", "incremental"


class BackupError(Exception):
    """The backup or restore cannot go on (one readable line)."""


class BackupBusy(BackupError):
    """Another backup is being written into the same directory."""


@dataclass(frozen=True, slots=True)
class Archive:
    path: Path
    manifest: dict[str, Any]

    @property
    def backup_id(self) -> str:
        return str(self.manifest["backup_id"])

    @property
    def archived_projections(self) -> list[dict[str, Any]]:
        return list(self.manifest.get("projections") or [])


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


def _sha256(member: Any) -> str:
    digest = hashlib.sha256()
    while block := member.read(1 << 20):
        digest.update(block)
    return digest.hexdigest()


def verify(archive: Archive) -> None:
    """Every chunk and file of the manifest present with its sha256; else BackupError naming the
    archive and the member."""
    with tarfile.open(archive.path, "r:") as tar:
        names = set(tar.getnames())
        for row in [*archive.manifest["chunks"], *(archive.manifest.get("files") or [])]:
            if row["name"] not in names:
                raise BackupError(f"{archive.path.name}: {row['name']} is missing")
            member = tar.extractfile(row["name"])
            if member is None or _sha256(member) != row["sha256"]:
                what = "chunk" if row["name"].startswith("log/") else "file"
                raise BackupError(f"{archive.path.name}: {what} {row['name']} is corrupt (sha256 differs)")


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
