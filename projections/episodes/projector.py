"""The episodes projector: `episode.*` events -> the LanceDB table `episodes` (seed 2.2).

- `episode.committed` adds the row (`distill_status` pending); an episode is immutable, so a
  second commit of the same (namespace, id) — which the write side refuses — would change nothing.
- `episode.distillation_started` moves a pending row to `processing` (its extractor, started_at).
- `episode.distilled` settles it: `completed` with `distilled_to`, or `skipped` with the reason.

Every value comes from the events (times are their HLC wall time, never the clock). One batch =
at most one table commit (an append when every touched row is new, otherwise one upsert), then the
checkpoint with the table version, as in `projections.tombstones.projector`: a batch delivered
again changes nothing, and after a crash between the rows and the checkpoint the next writer rolls
the table back first. Single writer per directory; no read scope (episodes never change a recall).
"""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import structlog

from events.catalogue import EpisodeCommitted, EpisodeDistillationStarted, EpisodeDistilled
from events.envelope import Event
from events.hlc import iso_from_ms
from projections.core.checkpoint import Checkpoint
from projections.core.lance import LanceTable, WriterLock
from projections.core.lance_projection import TableProjection
from projections.core.projector import RECALL_AUDIT, after_checkpoint, last_position
from projections.episodes.reader import SCHEMA, SCHEMA_VERSION, TABLE, episode_row_id

log = structlog.get_logger(__name__)

Row = dict[str, Any]
EPISODE_EVENTS = (EpisodeCommitted, EpisodeDistillationStarted, EpisodeDistilled)


def new_row(event: Event) -> Row:
    d: EpisodeCommitted = event.data
    return {"id": episode_row_id(d.namespace, d.episode_id), "episode_id": d.episode_id, "namespace": d.namespace,
            "agent_id": event.agent, "kind": d.kind, "status": d.status,
            "content": "\n".join(f"{t['role']}: {t['content']}" for t in d.turns),
            "chunks": orjson.dumps(list(d.turns)).decode(), "turns": len(d.turns),
            "timestamp": iso_from_ms(event.wall_ms), "distill_status": "pending", "distilled_to": [],
            "extractor": "", "reason": "", "density": 0.0, "started_at": "", "distilled_at": "",
            "committed_position": event.position, "position": event.position}


def fold(row: Row, event: Event) -> None:
    """Apply a distillation event to the row (in place)."""
    d = event.data
    if isinstance(d, EpisodeDistillationStarted):
        if row["distill_status"] != "pending":
            return
        row.update(distill_status="processing", extractor=d.extractor, started_at=iso_from_ms(event.wall_ms))
    elif isinstance(d, EpisodeDistilled):
        if row["distill_status"] in ("completed", "skipped"):
            return
        row.update(distill_status=d.status, distilled_to=list(d.distilled_to), extractor=d.extractor,
                   reason=d.reason, density=float(d.density), distilled_at=iso_from_ms(event.wall_ms))
    row["position"] = event.position


class EpisodesProjector(TableProjection):
    """Folds `episode.*` into LanceDB under `directory` (single writer)."""

    name = "episodes"
    ignored_types = RECALL_AUDIT   # counted by the activity, graph and metrics projections only
    schema = SCHEMA

    def __init__(self, directory: Path, *, compact_after_writes: int = 100,
                 retention: timedelta = timedelta(minutes=10)) -> None:
        self.directory = Path(directory)
        self.compact_after_writes = compact_after_writes
        self._table = LanceTable(self.directory, TABLE, SCHEMA, bitmap_columns=("distill_status",))
        self._lock = WriterLock(self.directory)
        self._init_checkpointing()
        self._init_upkeep(retention)

    def _meta(self, *, complete: bool = True) -> dict[str, Any]:
        return {"schema": SCHEMA_VERSION}

    def read_scope(self, event: Event) -> str | None:
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
        ours = [e for e in fresh if isinstance(e.data, EPISODE_EVENTS)]
        rows, any_existing = await self._fold(ours)
        if rows:
            table = pa.Table.from_pylist(list(rows.values()), schema=SCHEMA)
            await self._table.write(table, upsert=any_existing)
            self._writes_since_optimize += 1
        version = await self._table.version()
        new = Checkpoint(self.name, last_position(fresh, ck.position if ck else None), version, self._meta())
        await self._checkpoint(new)
        log.debug("episodes.applied", events=len(fresh), rows=len(rows), position=new.position,
                  ms=round((time.perf_counter() - started) * 1000, 1))
        if self.compact_after_writes and self._writes_since_optimize >= self.compact_after_writes:
            await self.maintain()

    async def _fold(self, events: list[Event]) -> tuple[dict[str, Row], bool]:
        """The rows the events change (by id) and whether any of them was already in the table."""
        if not events:
            return {}, False
        ids = [episode_row_id(e.data.namespace, e.data.episode_id) for e in events]
        stored: dict[str, Row] = {}
        if await self._table.exists():
            for r in (await self._table.fetch_keys(sorted(set(ids)))).to_pylist():
                stored[r["id"]] = r
        rows: dict[str, Row] = {}
        for rid, e in zip(ids, events):
            row = rows.get(rid) or stored.get(rid)
            if isinstance(e.data, EpisodeCommitted):
                if row is None:
                    rows[rid] = new_row(e)
                continue
            if row is None:  # a distillation event for an episode that was never committed: nothing to fold
                log.warning("episodes.orphan_event", type=e.type, position=e.position)
                continue
            fold(row, e)
            rows[rid] = row
        return rows, any(rid in stored for rid in rows)
