"""Read-only access to one SQLite projection database, shared by its readers: one connection
(`mode=ro`), opened when the file exists, guarded by a lock, closed on `close()`. A missing file
reads as "nothing yet" (`connection()` is None)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

T = TypeVar("T")


class SqliteReader:
    def __init__(self, directory: Path, db_file: str) -> None:
        self.path = Path(directory).absolute() / db_file  # `as_uri()` needs an absolute path
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def connection(self) -> sqlite3.Connection | None:
        if self._conn is None:
            if not self.path.exists():
                return None
            self._conn = sqlite3.connect(f"{self.path.as_uri()}?mode=ro", uri=True, check_same_thread=False)
        return self._conn

    def read(self, fn: Callable[[sqlite3.Connection], T], empty: T) -> T:
        """`fn(connection)` under the lock; `empty` while the file or its tables do not exist yet (the
        projector creates the file a moment before its tables)."""
        with self._lock:
            conn = self.connection()
            if conn is None:
                return empty
            try:
                return fn(conn)
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return empty
                raise

    def fetch(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        """The rows of one query under the lock; none while the file or its tables do not exist yet."""
        return self.read(lambda conn: conn.execute(sql, args).fetchall(), [])

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
