"""The tombstones projector: `memory.forgotten` / `memory.merged` / `memory.unmerged` -> the LanceDB
table `tombstones` (seed 2.2).

A forget run evicts a memory and records its content in the event; a merge folds a memory into
another (seed 6.2). The tombstone keeps it readable (`GET /api/v1/admin/tombstones`,
`projections.tombstones.reader`). Columns: seed 2.2's `id, original_id, content_snapshot,
namespace, reason, merged_into, deleted_at`, plus the memory `version` the event made, the
`position` of the last event that changed the row and `restored_at` (a merge undone by
`memory.unmerged`). Every value comes from the events: times are their HLC wall time, never the clock.

One tombstone per memory: the row id is a uuid5 of the memory id. The first eviction wins; a
merge writes the row unless the memory was already evicted; an unmerge stamps `restored_at` on
the merge's row, and a later merge or eviction of a restored memory replaces that row. An event at
or before the row's `position` is a redelivery and changes nothing. One batch = at most one table
commit (an append, or an upsert when a row already existed), then the checkpoint file (with the
table version it corresponds to), as in `projections.memories.projector`:

- a batch delivered again, or replayed over rows whose checkpoint was lost, changes nothing
  (events at or before the checkpoint are dropped; the others find their row already there);
- after a crash between the rows and the checkpoint, the next writer first rolls the table back
  to the checkpointed version (`restore`), so the table is exactly the state as of its checkpoint.

Single writer per directory (`flock`). No embedder, no vectors; Generational with no read
scope (a tombstone never changes what a recall returns). A checkpoint written by another schema
version raises `RebuildRequired` (replay the projection).
"""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import structlog

from events import positions
from events.catalogue import MemoryForgotten, MemoryMerged, MemoryUnmerged
from events.envelope import Event
from events.hlc import iso_from_ms
from projections.core.checkpoint import Checkpoint
from projections.core.lance import LanceTable, WriterLock
from projections.core.lance_projection import TableProjection
from projections.core.projector import RECALL_AUDIT, after_checkpoint, last_position
from projections.tombstones.reader import SCHEMA, SCHEMA_VERSION, TABLE

log = structlog.get_logger(__name__)

Row = dict[str, Any]
_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "zhiyi:tombstones")


def tombstone_id(memory_id: str) -> str:
    """The row id of a memory's tombstone: deterministic, so replays write the same row."""
    return str(uuid.uuid5(_ID_NAMESPACE, memory_id))


TOMBSTONE_EVENTS = (MemoryForgotten, MemoryMerged, MemoryUnmerged)


def tombstone_row(event: Event) -> Row:
    """The row a `memory.forgotten` or `memory.merged` writes."""
    data = event.data
    if isinstance(data, MemoryMerged):
        snapshot, reason, into = data.content, "merged", data.merged_into
    else:
        snapshot, reason, into = data.content_snapshot, data.reason, data.merged_into
    return {"id": tombstone_id(data.memory_id), "original_id": data.memory_id,
            "content_snapshot": snapshot, "namespace": data.namespace or event.ns,
            "reason": reason, "merged_into": into, "deleted_at": iso_from_ms(event.wall_ms),
            "version": int(data.version), "position": event.position, "restored_at": ""}


def folded(row: Row | None, event: Event) -> Row | None:
    """The tombstone after `event` (None: the event changes nothing)."""
    if row is not None and positions.key(event.position) <= positions.key(row["position"]):
        return None   # redelivered
    restorable = row is not None and row["reason"] == "merged" and row["restored_at"] != ""
    if isinstance(event.data, MemoryUnmerged):
        if row is None or row["reason"] != "merged" or row["restored_at"]:
            return None
        return {**row, "restored_at": iso_from_ms(event.wall_ms), "version": int(event.data.version),
                "position": event.position}
    if row is None or restorable:
        return tombstone_row(event)
    return None   # the first eviction (or the open merge) stays


class TombstonesProjector(TableProjection):
    """Folds `memory.forgotten` / `memory.merged` / `memory.unmerged` into LanceDB under `directory` (single writer)."""

    name = "tombstones"
    ignored_types = RECALL_AUDIT   # counted by the activity, graph and metrics projections only
    schema = SCHEMA

    def __init__(self, directory: Path, *, compact_after_writes: int = 100,
                 retention: timedelta = timedelta(minutes=10)) -> None:
        self.directory = Path(directory)
        self.compact_after_writes = compact_after_writes
        self._table = LanceTable(self.directory, TABLE, SCHEMA)
        self._lock = WriterLock(self.directory)
        self._init_checkpointing()
        self._init_upkeep(retention)

    def _meta(self, *, complete: bool = True) -> dict[str, Any]:
        return {"schema": SCHEMA_VERSION}

    # ------------------------------------------------------------------ fold

    def read_scope(self, event: Event) -> str | None:
        """Generational: a tombstone never changes what a recall returns."""
        return None

    async def apply(self, events: list[Event]) -> None:
        if not events:
            return
        await self._recover()
        ck = await self._current()
        fresh = after_checkpoint(events, ck.position if ck else None)
        if not fresh:
            return
        started = time.perf_counter()
        rows, upsert = await self._fold([e for e in fresh if isinstance(e.data, TOMBSTONE_EVENTS)])
        if rows:
            await self._table.write(pa.Table.from_pylist(rows, schema=SCHEMA), upsert=upsert)
            self._writes_since_optimize += 1
        # This writer's handle is at its own last commit: the rows and, on the first write, the key
        # index (LanceTable.write's own answer predates the index); on a retried batch, the rows it wrote.
        version = await self._table.version()
        new = Checkpoint(self.name, last_position(fresh, ck.position if ck else None), version, self._meta())
        await self._checkpoint(new)
        log.debug("tombstones.applied", events=len(fresh), rows=len(rows), position=new.position,
                  ms=round((time.perf_counter() - started) * 1000, 1))
        if self.compact_after_writes and self._writes_since_optimize >= self.compact_after_writes:
            await self.maintain()

    async def _fold(self, events: list[Event]) -> tuple[list[Row], bool]:
        """(the changed rows, whether any of them already existed in the table)."""
        if not events:
            return [], False
        ids = list(dict.fromkeys(tombstone_id(e.data.memory_id) for e in events))
        existing: dict[str, Row] = {}
        if await self._table.exists():
            existing = {r["id"]: r for r in (await self._table.fetch_keys(ids)).to_pylist()}
        work = dict(existing)
        changed: dict[str, None] = {}
        for e in events:
            tid = tombstone_id(e.data.memory_id)
            row = folded(work.get(tid), e)
            if row is not None:
                work[tid] = row
                changed[tid] = None
        return [work[t] for t in changed], any(t in existing for t in changed)
