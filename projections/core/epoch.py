"""Which log the projections under a root were folded from: its epoch (events.redis.keys.EPOCH), in
`<root>/projections/EPOCH`, written atomically.

One file for the whole `projections/` folder, not one per checkpoint: the folder is what
`zhiyi replay --in-place` builds and swaps as a unit, so every projection in it comes from the
same log. The projection runner compares it with the log's epoch before every read
(`store.check_not_reset(checkpoint, epoch)`), the gateway before serving a request.
"""

from __future__ import annotations

import os
from pathlib import Path

from events.redis.store import EventStore
from projections.core.registry import projections_root

FILENAME = "EPOCH"


def epoch_path(root: Path) -> Path:
    return projections_root(root) / FILENAME


def load_epoch(root: Path) -> str | None:
    """The epoch the projections under `root` were folded from; None when none was recorded
    (a fresh data dir, or projections written before epochs existed)."""
    try:
        return epoch_path(root).read_text().strip() or None
    except FileNotFoundError:
        return None


def save_epoch(root: Path, epoch: str) -> None:
    """Record `epoch` for the projections under `root` (tmp + fsync + rename: never torn)."""
    path = epoch_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{FILENAME}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, epoch.encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


async def open_projections_epoch(store: EventStore, root: Path) -> str | None:
    """At a long-running process's start: the epoch its projections serve, which its store then
    expects from the log (`store.epoch`).

    Projections with no recorded epoch (fresh, or older than epochs) take the log's, which is
    created for an empty log or adopted for one written before epochs. Projections that carry an
    epoch never create or adopt one: a log whose epoch is missing or different was wiped or
    replaced, and stays refused (LogResetError on append, 503 `log_reset`) until
    `zhiyi replay --in-place`. Redis errors propagate (the caller retries).
    """
    recorded = load_epoch(root)
    found = await store.open_epoch(create=recorded is None, adopt=recorded is None)
    if recorded is None and found is not None:
        save_epoch(root, found)
        recorded = found
    store.epoch = recorded
    return recorded
