"""A projector's checkpoint as a small JSON file, written atomically (tmp + fsync + rename).

Used by projectors whose store has no transactions shared with the checkpoint (LanceDB):
the rows are written first, the checkpoint after, and replays are made harmless by the
per-row event position.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from projections.core.errors import ProjectionError

FILENAME = "checkpoint.json"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    projector: str
    position: str | None = None
    table_version: int | None = None      # store version the position corresponds to
    meta: dict[str, Any] = field(default_factory=dict)  # model, dim, schema version...


def load(directory: Path) -> Checkpoint | None:
    path = directory / FILENAME
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        doc = orjson.loads(raw)
        return Checkpoint(doc["projector"], doc.get("position"), doc.get("table_version"),
                          dict(doc.get("meta") or {}))
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise ProjectionError(f"corrupt checkpoint file {path}: {exc}") from exc


def save(directory: Path, checkpoint: Checkpoint) -> None:
    """Write atomically: a reader sees the old file or the new one, never a torn one."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / FILENAME
    tmp = directory / (FILENAME + ".tmp")
    data = orjson.dumps(asdict(checkpoint), option=orjson.OPT_SORT_KEYS)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
