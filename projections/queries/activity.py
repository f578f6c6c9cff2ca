"""Read side of the activity projection (`projections.activity`): how often, and when last, each
memory was recalled."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from events.hlc import iso_from_ms

DB_FILE = "activity.db"


class ActivityReader:
    """Read-only access; a missing database reads as "never recalled"."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / DB_FILE
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection | None:
        if self._conn is None:
            if not self.path.exists():
                return None
            self._conn = sqlite3.connect(f"{self.path.as_uri()}?mode=ro", uri=True, check_same_thread=False)
        return self._conn

    def recalls(self, memory_ids: list[str]) -> dict[str, tuple[int, str]]:
        """memory id -> (recall_count, last_recalled_at ISO or ''), for the ids ever recalled."""
        if not memory_ids:
            return {}
        with self._lock:
            conn = self._connect()
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

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
