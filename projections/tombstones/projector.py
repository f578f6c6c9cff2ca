"""The tombstones projector: `memory.forgotten` events -> the LanceDB table `tombstones` (seed 2.2).

A forget run evicts a memory and records its content in the event; the tombstone keeps it
readable (`GET /api/v1/admin/tombstones`, `projections.tombstones.reader`). Columns: seed 2.2's
`id, original_id, content_snapshot, namespace, reason, merged_into, deleted_at`, plus the
memory `version` the eviction made and the event `position`. Every value comes from the event:
`deleted_at` is the event's HLC wall time, never the clock.

One tombstone per memory, the first `memory.forgotten` wins: the row id is a uuid5 of the
memory id, and an event whose row already exists (in the table or earlier in the batch) is
skipped. One batch = at most one table commit (an append of the new rows only), then the
checkpoint file (with the table version it corresponds to), as in `projections.memories.projector`:

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

from events.catalogue import MemoryForgotten
from events.envelope import Event
from events.hlc import iso_from_ms
from projections.core.checkpoint import Checkpoint
from projections.core.lance import LanceTable, WriterLock
from projections.core.lance_projection import TableProjection
from projections.core.projector import after_checkpoint, last_position
from projections.tombstones.reader import SCHEMA, SCHEMA_VERSION, TABLE

log = structlog.get_logger(__name__)

Row = dict[str, Any]
_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "zhiyi:tombstones")


def tombstone_id(memory_id: str) -> str:
    """The row id of a memory's tombstone: deterministic, so replays write the same row."""
    return str(uuid.uuid5(_ID_NAMESPACE, memory_id))


def tombstone_row(event: Event) -> Row:
    data: MemoryForgotten = event.data
    return {"id": tombstone_id(data.memory_id), "original_id": data.memory_id,
            "content_snapshot": data.content_snapshot, "namespace": data.namespace or event.ns,
            "reason": data.reason, "merged_into": data.merged_into, "deleted_at": iso_from_ms(event.wall_ms),
            "version": int(data.version), "position": event.position}


class TombstonesProjector(TableProjection):
    """Folds `memory.forgotten` into LanceDB under `directory` (single writer)."""

    name = "tombstones"
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
        rows = await self._new_rows([e for e in fresh if isinstance(e.data, MemoryForgotten)])
        if rows:  # every row is new: one append
            await self._table.write(pa.Table.from_pylist(rows, schema=SCHEMA), upsert=False)
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

    async def _new_rows(self, forgotten: list[Event]) -> list[Row]:
        """The tombstones of memories that have none yet: the first event per memory wins."""
        if not forgotten:
            return []
        first: dict[str, Event] = {}
        for e in forgotten:
            first.setdefault(tombstone_id(e.data.memory_id), e)
        existing: set[str] = set()
        if await self._table.exists():
            existing = set((await self._table.fetch_keys(list(first))).column("id").to_pylist())
        return [tombstone_row(e) for tid, e in first.items() if tid not in existing]
