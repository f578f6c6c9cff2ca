"""The metrics projector (the product card's "metrics" read model): the log folded into UTC-day and
hour buckets, per agent and namespace, of what the self-metrics (seed 3.2.3) are computed from ->
SQLite `<dir>/metrics.db`.

Counted per event (the bucket is the event's HLC wall time, so a replay gives the same buckets):

| metric | event |
|---|---|
| commits | `memory.committed` |
| recalls, recall_misses | `recall.served`; a miss has no result (results are already cut at `min_score`) |
| useful, not_useful | `memory.feedback` |
| corrections, dependants_of_corrected | `memory.corrected`; its DEPENDS_ON dependants at that moment |
| cascades | `memory.marked_stale` caused by another memory (the correction cascade) |
| conflicts_detected, conflicts_resolved, conflicts_auto_resolved | `conflict.detected` / `.resolved` (auto: a rule or the model decided) |
| forgotten | `memory.forgotten` |
| backtrace_sampled, backtrace_lossy | a `consolidation.completed` whose backtrace ran |
| events:<type> | every event, by its type (`/metrics`' `zhiyi_events_total`) |

The DEPENDS_ON relation is kept here (`dependants`), from the commits' `depends_on`, so the fold
needs no other projection. Rows and the checkpoint are written in one transaction.
"""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

from events.catalogue import (
    ConflictDetected, ConflictResolved, ConsolidationCompleted, GapDetected, GapFilled, MemoryCommitted,
    MemoryCorrected, MemoryFeedback, MemoryForgotten, MemoryMarkedStale, RecallServed,
)
from events.envelope import Event, UnknownPayload
from projections.core.digest import Digester
from projections.core.sqlite_projection import SqliteProjection
from projections.metrics.reader import DB_FILE, EVENTS_PREFIX

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS counts (
    day TEXT NOT NULL, hour INTEGER NOT NULL, agent TEXT NOT NULL, namespace TEXT NOT NULL, metric TEXT NOT NULL,
    value INTEGER NOT NULL, PRIMARY KEY (day, hour, agent, namespace, metric));
CREATE INDEX IF NOT EXISTS idx_counts_metric ON counts (metric, day);
CREATE TABLE IF NOT EXISTS dependants (memory_id TEXT NOT NULL, dependant TEXT NOT NULL,
    PRIMARY KEY (memory_id, dependant));
"""


def _bucket(wall_ms: int) -> tuple[str, int]:
    t = datetime.fromtimestamp(wall_ms / 1000, tz=timezone.utc)
    return t.strftime("%Y-%m-%d"), t.hour


class MetricsProjector(SqliteProjection):
    name = "metrics"
    schema = _SCHEMA
    schema_version = SCHEMA_VERSION

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, DB_FILE)

    def _fold_batch(self, conn: sqlite3.Connection, events: list[Event]) -> None:
        """The batch's counts summed per row in memory first, then one upsert per row (sums: the same
        values as adding them one by one). The dependants table, read by the fold, is written as it goes."""
        sums: dict[tuple[str, int, str, str, str], int] = {}
        buckets: dict[int, tuple[str, int]] = {}   # the hour (wall ms // 3_600_000) -> its bucket
        for ev in events:
            if isinstance(ev.data, UnknownPayload):
                continue   # a type this build does not know (a newer writer's): changes nothing
            for metric, n in [(f"{EVENTS_PREFIX}{ev.type}", 1), *_counted(conn, ev)]:
                if n:
                    wall_ms = ev.wall_ms
                    hour_key = wall_ms // 3_600_000
                    bucket = buckets.get(hour_key)
                    if bucket is None:
                        bucket = buckets[hour_key] = _bucket(wall_ms)
                    namespace = getattr(ev.data, "namespace", "") or ev.ns
                    key = (bucket[0], bucket[1], ev.agent, namespace, metric)
                    sums[key] = sums.get(key, 0) + n
        if sums:
            conn.executemany("INSERT INTO counts VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (day, hour, agent, "
                             "namespace, metric) DO UPDATE SET value = value + excluded.value",
                             [(*key, n) for key, n in sums.items()])

    def read_scope(self, event: Event) -> str | None:
        """Generational: nothing here changes a recall's results."""
        return None

    async def digest(self) -> str:
        return await asyncio.to_thread(self._digest)

    def _digest(self) -> str:
        d = Digester()
        with self._snapshot("SELECT * FROM counts ORDER BY day, hour, agent, namespace, metric",
                            "SELECT * FROM dependants ORDER BY memory_id, dependant") as (counts, deps):
            for row in counts:
                d.add({"count": list(row)})
            for row in deps:
                d.add({"dependant": list(row)})
        return d.hexdigest()


def _counted(conn: sqlite3.Connection, ev: Event) -> list[tuple[str, int]]:
    d = ev.data
    if isinstance(d, MemoryCommitted):
        for target in d.depends_on:
            conn.execute("INSERT OR IGNORE INTO dependants VALUES (?, ?)", (target, d.memory_id))
        return [("commits", 1)]
    if isinstance(d, RecallServed):
        return [("recalls", 1), ("recall_misses", 0 if d.result_ids else 1)]
    if isinstance(d, MemoryFeedback):
        return [(d.verdict, 1)] if d.verdict in ("useful", "not_useful") else []
    if isinstance(d, MemoryCorrected):
        (n,) = conn.execute("SELECT COUNT(*) FROM dependants WHERE memory_id = ?", (d.memory_id,)).fetchone()
        return [("corrections", 1), ("dependants_of_corrected", int(n))]
    if isinstance(d, MemoryMarkedStale):
        return [("cascades", 1 if d.caused_by else 0)]
    if isinstance(d, ConflictDetected):
        return [("conflicts_detected", 1)]
    if isinstance(d, ConflictResolved):
        return [("conflicts_resolved", 1), ("conflicts_auto_resolved", 1 if d.rule else 0)]
    if isinstance(d, MemoryForgotten):
        return [("forgotten", 1)]
    if isinstance(d, GapDetected):
        return [("gaps_detected", 1)]
    if isinstance(d, GapFilled):
        return [("gaps_closed", 1)]
    if isinstance(d, ConsolidationCompleted):
        for step in d.steps:
            if step.get("step") == "backtrace" and step.get("status") == "ok":
                detail = step.get("detail") or {}
                return [("backtrace_sampled", int(detail.get("sampled") or 0)),
                        ("backtrace_lossy", len(detail.get("lossy") or []))]
    return []
