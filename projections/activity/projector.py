"""The activity projector: `recall.served` events -> SQLite `<dir>/activity.db` (WAL).

Recall counts live here, not in the memories table: every recall serves up to `top_k` memories,
and rewriting those LanceDB rows for each one (plus the serving index following them) halved
recall throughput at 100k memories. Same CRDT semantics as the memory record's recall counter
(`projections.memories.record`): a G-counter per (memory, origin) and a max register for the last
recall time, with per-origin high-water positions so a redelivered event counts once.

Tables: `recalls(memory_id, origin, count, last_ms)` (WITHOUT ROWID: one B-tree, the key's),
`recall_changes(change, memory_id)`, `high_water(origin, position)`, `trace_steps(trace_id, position,
agent, memory_ids)` (the recalls made with a `trace_id`: the steps V-value propagation walks back,
seed 6.3), `checkpoint`. Rows, changes,
high-water and checkpoint are written in ONE transaction.

`recall_changes` numbers every memory a batch touches (appended: its pages are the table's last), so a
reader holding the totals in memory (`projections.activity.reader.RecallCounts`) re-reads only the
memories changed since the last number it saw; only the last RECALL_CHANGES_KEEP are kept (a reader
further behind reads everything again). Schema 2 kept the number on the row, indexed: every recall
rewrote three B-trees at random places, the most expensive part of folding a recall. It marks a
change, not state: a replay in other batches numbers them differently, and the digest leaves it out.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import orjson

from events import positions
from events.catalogue import RecallServed
from events.envelope import Event
from projections.core.digest import Digester
from projections.activity.reader import DB_FILE
from projections.core.sqlite_projection import SqliteProjection

SCHEMA_VERSION = 4      # 4: trace_steps
RECALL_CHANGES_KEEP = 100_000
_RECALLS = """CREATE TABLE IF NOT EXISTS {name} (
    memory_id TEXT NOT NULL, origin TEXT NOT NULL, count INTEGER NOT NULL, last_ms INTEGER NOT NULL,
    PRIMARY KEY (memory_id, origin)) WITHOUT ROWID;"""
_SCHEMA = _RECALLS.format(name="recalls") + """
CREATE TABLE IF NOT EXISTS recall_changes (change INTEGER PRIMARY KEY, memory_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS high_water (origin TEXT PRIMARY KEY, position TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trace_steps (trace_id TEXT NOT NULL, position TEXT NOT NULL, agent TEXT NOT NULL,
    memory_ids TEXT NOT NULL, PRIMARY KEY (trace_id, position)) WITHOUT ROWID;
"""


class ActivityProjector(SqliteProjection):
    name = "activity"
    schema = _SCHEMA
    schema_version = SCHEMA_VERSION

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, DB_FILE)

    def _migrate(self, conn: sqlite3.Connection, from_version: int) -> None:
        """Schemas 1 and 2 (a rowid table, schema 2 with an indexed change number on the row) -> 3, in one
        transaction: the rows move to the WITHOUT ROWID table; change numbers start again (a reader
        holding a later one reads everything again). 3 -> 4 adds `trace_steps` (the schema script does):
        the traces of recalls folded before it are not known."""
        if from_version >= 3:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(_RECALLS.format(name="recalls_v3"))
            conn.execute("INSERT INTO recalls_v3 SELECT memory_id, origin, count, last_ms FROM recalls")
            conn.execute("DROP TABLE recalls")   # and its indexes
            conn.execute("ALTER TABLE recalls_v3 RENAME TO recalls")
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _fold_batch(self, conn: sqlite3.Connection, events: list[Event]) -> None:
        """The batch's recalls summed per (memory, origin) in memory first, then one upsert per row: the
        same counts and last times as folding them one by one (a sum and a max), a few statements a batch."""
        hw = dict(conn.execute("SELECT origin, position FROM high_water").fetchall())
        moved: dict[str, str] = {}
        rows: dict[tuple[str, str], list[int]] = {}   # (memory, origin) -> [recalls, last ms]
        traced: list[tuple[str, str, str, str]] = []
        for ev in events:
            if not isinstance(ev.data, RecallServed):
                continue
            if positions.key(ev.position) <= positions.key(hw.get(ev.origin)):
                continue  # this origin's event was counted already
            hw[ev.origin] = moved[ev.origin] = ev.position
            if ev.data.trace_id:
                traced.append((ev.data.trace_id, ev.position, ev.agent, orjson.dumps(ev.data.result_ids).decode()))
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
            conn.executemany(
                "INSERT INTO recalls (memory_id, origin, count, last_ms) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (memory_id, origin) DO UPDATE SET count = count + excluded.count, "
                "last_ms = MAX(last_ms, excluded.last_ms)",
                [(mid, origin, n, ms) for (mid, origin), (n, ms) in rows.items()])
            conn.executemany("INSERT INTO recall_changes (memory_id) VALUES (?)",
                             [(mid,) for mid in dict.fromkeys(mid for mid, _ in rows)])
            conn.execute("DELETE FROM recall_changes WHERE change <= (SELECT MAX(change) FROM recall_changes) - ?",
                         (RECALL_CHANGES_KEEP,))
        if traced:
            conn.executemany("INSERT OR IGNORE INTO trace_steps VALUES (?, ?, ?, ?)", traced)
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
        with self._snapshot("SELECT memory_id, origin, count, last_ms FROM recalls ORDER BY memory_id, origin",
                            "SELECT origin, position FROM high_water ORDER BY origin",
                            "SELECT trace_id, position, agent, memory_ids FROM trace_steps ORDER BY trace_id, position"
                            ) as (rows, hw, traces):
            for mid, origin, count, last in rows:
                d.add({"t": "recalls", "memory_id": mid, "origin": origin, "count": count, "last_ms": last})
            for origin, pos in hw:
                d.add({"t": "high_water", "origin": origin, "position": pos})
            for trace_id, pos, agent, ids in traces:
                d.add({"t": "trace_steps", "trace_id": trace_id, "position": pos, "agent": agent, "memory_ids": ids})
        return d.hexdigest()
