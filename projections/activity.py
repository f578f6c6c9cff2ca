"""The activity projector: `recall.served` events -> SQLite `<dir>/activity.db` (WAL).

Recall counts live here, not in the memories table: every recall serves up to `top_k` memories,
and rewriting those LanceDB rows for each one (plus the serving index following them) halved
recall throughput at 100k memories. Same CRDT semantics as the memory record's recall counter
(`projections.memory_state`): a G-counter per (memory, origin) and a max register for the last
recall time, with per-origin high-water positions so a redelivered event counts once.

Tables: `recalls(memory_id, origin, count, last_ms)`, `high_water(origin, position)`,
`checkpoint`. Rows, high-water and checkpoint are written in ONE transaction.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

from events import positions
from events.catalogue import RecallServed
from events.envelope import Event
from projections.digest import Digester
from projections.projector import after_checkpoint, last_position
from projections.queries.activity import DB_FILE

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS recalls (
    memory_id TEXT NOT NULL, origin TEXT NOT NULL, count INTEGER NOT NULL, last_ms INTEGER NOT NULL,
    PRIMARY KEY (memory_id, origin));
CREATE TABLE IF NOT EXISTS high_water (origin TEXT PRIMARY KEY, position TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoint (projector TEXT PRIMARY KEY, position TEXT NOT NULL);
"""


class ActivityProjector:
    name = "activity"

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.path = self.directory / DB_FILE
        self._conn: sqlite3.Connection | None = None
        self._ready = False
        self._lock = threading.Lock()

    def _connect(self, *, create: bool) -> sqlite3.Connection | None:
        if self._conn is None:
            if not create and not self.path.exists():
                return None
            self.directory.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL: atomic; a lost tail is re-applied from the log
            self._conn = conn
        if create and not self._ready:
            self._conn.executescript(_SCHEMA)
            self._conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            self._ready = True
        return self._conn

    @staticmethod
    def _checkpoint(conn: sqlite3.Connection) -> str | None:
        try:
            row = conn.execute("SELECT position FROM checkpoint WHERE projector = 'activity'").fetchone()
        except sqlite3.OperationalError:
            return None
        return row[0] if row else None

    async def load_checkpoint(self) -> str | None:
        return await asyncio.to_thread(self._load_checkpoint)

    def _load_checkpoint(self) -> str | None:
        with self._lock:
            conn = self._connect(create=False)
            return None if conn is None else self._checkpoint(conn)

    async def apply(self, events: list[Event]) -> None:
        if events:
            await asyncio.to_thread(self._apply, events)

    def _apply(self, events: list[Event]) -> None:
        with self._lock:
            conn = self._connect(create=True)
            assert conn is not None
            conn.execute("BEGIN IMMEDIATE")
            try:
                checkpoint = self._checkpoint(conn)
                fresh = after_checkpoint(events, checkpoint)
                hw = dict(conn.execute("SELECT origin, position FROM high_water").fetchall())
                for ev in fresh:
                    if not isinstance(ev.data, RecallServed):
                        continue
                    if positions.key(ev.position) <= positions.key(hw.get(ev.origin)):
                        continue  # this origin's event was counted already
                    hw[ev.origin] = ev.position
                    conn.executemany(
                        "INSERT INTO recalls (memory_id, origin, count, last_ms) VALUES (?, ?, 1, ?) "
                        "ON CONFLICT (memory_id, origin) DO UPDATE SET count = count + 1, "
                        "last_ms = MAX(last_ms, excluded.last_ms)",
                        [(mid, ev.origin, ev.wall_ms) for mid in dict.fromkeys(ev.data.result_ids)])
                conn.executemany("INSERT INTO high_water (origin, position) VALUES (?, ?) "
                                 "ON CONFLICT (origin) DO UPDATE SET position = excluded.position", hw.items())
                pos = last_position(fresh, checkpoint)
                if pos is not None and pos != checkpoint:
                    conn.execute("INSERT INTO checkpoint (projector, position) VALUES ('activity', ?) "
                                 "ON CONFLICT (projector) DO UPDATE SET position = excluded.position", (pos,))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def read_scope(self, event: Event) -> str | None:
        """Generational: recall counts never change what a recall returns."""
        return None

    async def digest(self) -> str:
        return await asyncio.to_thread(self._digest)

    def _digest(self) -> str:
        d = Digester()
        with self._lock:
            conn = self._connect(create=False)
            if conn is None:
                return d.hexdigest()
            conn.execute("BEGIN")
            try:
                try:
                    rows = conn.execute("SELECT memory_id, origin, count, last_ms FROM recalls "
                                        "ORDER BY memory_id, origin").fetchall()
                    hw = conn.execute("SELECT origin, position FROM high_water ORDER BY origin").fetchall()
                except sqlite3.OperationalError:
                    rows, hw = [], []
            finally:
                conn.execute("COMMIT")
        for mid, origin, count, last in rows:
            d.add({"t": "recalls", "memory_id": mid, "origin": origin, "count": count, "last_ms": last})
        for origin, pos in hw:
            d.add({"t": "high_water", "origin": origin, "position": pos})
        return d.hexdigest()

    async def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
