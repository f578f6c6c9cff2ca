"""The activity projector: `recall.served` events -> SQLite `<dir>/activity.db` (WAL).

Recall counts live here, not in the memories table: every recall serves up to `top_k` memories,
and rewriting those LanceDB rows for each one (plus the serving index following them) halved
recall throughput at 100k memories. Same CRDT semantics as the memory record's recall counter
(`projections.memories.record`): a G-counter per (memory, origin) and a max register for the last
recall time, with per-origin high-water positions so a redelivered event counts once.

Tables: `recalls(memory_id, origin, count, last_ms, change)`, `high_water(origin, position)`,
`checkpoint`. Rows, high-water and checkpoint are written in ONE transaction.

`change` numbers the transactions: each batch writes `MAX(change) + 1` into the rows it touches,
so a reader holding the totals in memory (`projections.activity.reader.RecallCounts`) re-reads
only the memories changed since the last number it saw. It marks a change, not state: a replay
in other batches numbers them differently, and the digest leaves it out.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from events import positions
from events.catalogue import RecallServed
from events.envelope import Event
from projections.core.digest import Digester
from projections.activity.reader import DB_FILE
from projections.core.sqlite_projection import SqliteProjection

SCHEMA_VERSION = 2
_SCHEMA = """
CREATE TABLE IF NOT EXISTS recalls (
    memory_id TEXT NOT NULL, origin TEXT NOT NULL, count INTEGER NOT NULL, last_ms INTEGER NOT NULL,
    change INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (memory_id, origin));
CREATE INDEX IF NOT EXISTS idx_recalls_change ON recalls (change);
CREATE TABLE IF NOT EXISTS high_water (origin TEXT PRIMARY KEY, position TEXT NOT NULL);
"""


class ActivityProjector(SqliteProjection):
    name = "activity"
    schema = _SCHEMA
    schema_version = SCHEMA_VERSION

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, DB_FILE)

    def _migrate(self, conn: sqlite3.Connection, from_version: int) -> None:
        if from_version < 2:  # version 1 had no change numbers: its rows read as change 0
            conn.execute("ALTER TABLE recalls ADD COLUMN change INTEGER NOT NULL DEFAULT 0")

    def _fold_batch(self, conn: sqlite3.Connection, events: list[Event]) -> None:
        """The batch's recalls summed per (memory, origin) in memory first, then one upsert per row: the
        same counts and last times as folding them one by one (a sum and a max), a few statements a batch."""
        hw = dict(conn.execute("SELECT origin, position FROM high_water").fetchall())
        moved: dict[str, str] = {}
        rows: dict[tuple[str, str], list[int]] = {}   # (memory, origin) -> [recalls, last ms]
        for ev in events:
            if not isinstance(ev.data, RecallServed):
                continue
            if positions.key(ev.position) <= positions.key(hw.get(ev.origin)):
                continue  # this origin's event was counted already
            hw[ev.origin] = moved[ev.origin] = ev.position
            ms = ev.wall_ms
            for mid in dict.fromkeys(ev.data.result_ids):
                row = rows.get((mid, ev.origin))
                if row is None:
                    rows[(mid, ev.origin)] = [1, ms]
                else:
                    row[0] += 1
                    if ms > row[1]:
                        row[1] = ms
        if rows:
            change = conn.execute("SELECT COALESCE(MAX(change), 0) + 1 FROM recalls").fetchone()[0]
            conn.executemany(
                "INSERT INTO recalls (memory_id, origin, count, last_ms, change) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (memory_id, origin) DO UPDATE SET count = count + excluded.count, "
                "last_ms = MAX(last_ms, excluded.last_ms), change = excluded.change",
                [(mid, origin, n, ms, change) for (mid, origin), (n, ms) in rows.items()])
        if moved:
            conn.executemany("INSERT INTO high_water (origin, position) VALUES (?, ?) "
                             "ON CONFLICT (origin) DO UPDATE SET position = excluded.position", moved.items())

    def read_scope(self, event: Event) -> str | None:
        """Generational: recall counts never change what a recall returns."""
        return None

    async def digest(self) -> str:
        return await asyncio.to_thread(self._digest)

    def _digest(self) -> str:
        d = Digester()
        rows, hw = self._snapshot("SELECT memory_id, origin, count, last_ms FROM recalls ORDER BY memory_id, origin",
                                  "SELECT origin, position FROM high_water ORDER BY origin")
        for mid, origin, count, last in rows:
            d.add({"t": "recalls", "memory_id": mid, "origin": origin, "count": count, "last_ms": last})
        for origin, pos in hw:
            d.add({"t": "high_water", "origin": origin, "position": pos})
        return d.hexdigest()
