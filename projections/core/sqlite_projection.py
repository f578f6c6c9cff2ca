"""What every SQLite projector shares: one WAL database per projection directory, created on the
first write only; the checkpoint in a `checkpoint` table written in the SAME transaction as the
rows (`BEGIN IMMEDIATE`, the checkpoint re-read inside it), so a batch applied twice, or by two
writers, changes nothing and a crash leaves the whole batch or none of it; digests read one
snapshot. Subclasses give the schema and fold the fresh events of a batch, and may name the event
types their fold never changes anything for (`ignored_types`: the runner then skips batches of those
alone and moves the checkpoint with `advance`, see projections.core.projector.Skipping)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from events import positions
from events.envelope import Event
from projections.core.projector import after_checkpoint, last_position


WAL_AUTOCHECKPOINT = 10_000   # pages (4 KiB): a WAL of up to ~40 MiB


class SqliteProjection:
    name: str = ""
    schema: str = ""            # CREATE TABLE IF NOT EXISTS ... (the checkpoint table is added here)
    schema_version: int = 1
    ignored_types: frozenset[str] = frozenset()   # event types whose fold never changes a row

    def __init__(self, directory: Path, db_file: str) -> None:
        self.directory = Path(directory)
        self.path = self.directory / db_file
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
            conn.execute("PRAGMA cache_size=-65536")
            # the WAL is copied back into the database every WAL_AUTOCHECKPOINT pages (SQLite: 1000): a
            # page rewritten by many batches meanwhile is copied once (recalls rewrite the same pages)
            conn.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT}")
            self._conn = conn
        if create and not self._ready:
            found = self._conn.execute("PRAGMA user_version").fetchone()[0]
            if 0 < found < self.schema_version:
                self._migrate(self._conn, found)
            self._conn.executescript(self.schema + "\nCREATE TABLE IF NOT EXISTS checkpoint "
                                     "(projector TEXT PRIMARY KEY, position TEXT NOT NULL);")
            self._conn.execute(f"PRAGMA user_version={int(self.schema_version)}")
            self._ready = True
        return self._conn

    def _migrate(self, conn: sqlite3.Connection, from_version: int) -> None:
        """Bring a database written by schema `from_version` up to this one before the schema
        script runs (it only creates what is missing): columns it adds, say."""

    def _checkpoint(self, conn: sqlite3.Connection) -> str | None:
        try:
            row = conn.execute("SELECT position FROM checkpoint WHERE projector = ?", (self.name,)).fetchone()
        except sqlite3.OperationalError:  # tables not created yet
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
        with self._writing() as conn:
            checkpoint = self._checkpoint(conn)
            fresh = after_checkpoint(events, checkpoint)
            self._fold_batch(conn, fresh)
            pos = last_position(fresh, checkpoint)
            if pos is not None and pos != checkpoint:
                self._store_checkpoint(conn, pos)

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT; ROLLBACK on any error), under the lock."""
        with self._lock:
            conn = self._connect(create=True)
            assert conn is not None
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _store_checkpoint(self, conn: sqlite3.Connection, position: str) -> None:
        conn.execute("INSERT INTO checkpoint (projector, position) VALUES (?, ?) "
                     "ON CONFLICT (projector) DO UPDATE SET position = excluded.position", (self.name, position))

    def _fold_batch(self, conn: sqlite3.Connection, events: list[Event]) -> None:
        raise NotImplementedError

    async def advance(self, position: str) -> None:
        """Skipping: store `position` as the checkpoint, when later than the stored one (no row changes)."""
        await asyncio.to_thread(self._advance, position)

    def _advance(self, position: str) -> None:
        with self._writing() as conn:
            if positions.key(position) > positions.key(self._checkpoint(conn)):
                self._store_checkpoint(conn, position)

    @contextmanager
    def _snapshot(self, *queries: str) -> Iterator[list[Iterable[tuple]]]:
        """The results of `queries` in one read snapshot ([] each before the first write), as cursors
        read while the block runs: a digest streams its rows (at 1M memories the graph's rows, fetched
        whole, held several GB)."""
        with self._lock:
            conn = self._connect(create=False)
            if conn is None:
                yield [[] for _ in queries]
                return
            conn.execute("BEGIN")
            cursors: list[sqlite3.Cursor] = []
            try:
                try:
                    cursors = [conn.execute(q) for q in queries]
                except sqlite3.OperationalError:
                    yield [[] for _ in queries]
                    return
                yield list(cursors)
            finally:
                for cursor in cursors:
                    cursor.close()
                conn.execute("COMMIT")

    async def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
