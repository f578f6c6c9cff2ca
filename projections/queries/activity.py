"""Read side of the activity projection (`projections.activity`): how often, and when last, each
memory was recalled."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from events.hlc import iso_from_ms
from projections.queries.sqlite_reader import SqliteReader

DB_FILE = "activity.db"


class ActivityReader(SqliteReader):
    """Read-only access; a missing database reads as "never recalled"."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, DB_FILE)

    def recalls(self, memory_ids: list[str]) -> dict[str, tuple[int, str]]:
        """memory id -> (recall_count, last_recalled_at ISO or ''), for the ids ever recalled."""
        if not memory_ids:
            return {}
        with self._lock:
            conn = self.connection()
            if conn is None:
                return {}
            out: dict[str, tuple[int, str]] = {}
            try:
                for lo in range(0, len(memory_ids), 500):
                    chunk = memory_ids[lo:lo + 500]
                    marks = ",".join("?" * len(chunk))
                    for mid, count, last in conn.execute(
                            f"SELECT memory_id, SUM(count), MAX(last_ms) FROM recalls WHERE memory_id IN ({marks}) "
                            "GROUP BY memory_id", chunk):
                        out[mid] = (int(count), iso_from_ms(int(last)) if last else "")
            except sqlite3.OperationalError:  # created but not initialised yet
                return {}
            return out
