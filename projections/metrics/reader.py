"""Read side of the metrics projection (`projections.metrics.projector`, SQLite `metrics.db`): the
counts summed per UTC day, over every agent and namespace or over the ones named. A missing
database reads as no counts."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any, ClassVar

from projections.core.sqlite_reader import SqliteReader

DB_FILE = "metrics.db"


class MetricsReader(SqliteReader):
    reads: ClassVar[tuple[str, ...]] = ("metrics",)

    def __init__(self, directory: Any) -> None:
        super().__init__(directory, DB_FILE)

    async def daily(self, first_day: str, last_day: str, namespaces: list[str] | None = None
                    ) -> dict[str, dict[str, int]]:
        """{day: {metric: total}} for the days in [first_day, last_day] (ISO dates, UTC)."""
        return await asyncio.to_thread(self._daily, first_day, last_day, namespaces)

    def _daily(self, first_day: str, last_day: str, namespaces: list[str] | None) -> dict[str, dict[str, int]]:
        where, args = "day >= ? AND day <= ?", [first_day, last_day]
        if namespaces is not None:
            where += f" AND namespace IN ({', '.join('?' for _ in namespaces)})"
            args += namespaces
        with self._lock:
            conn = self.connection()
            if conn is None:
                return {}
            try:
                rows = conn.execute(f"SELECT day, metric, SUM(value) FROM counts WHERE {where} GROUP BY day, metric",
                                    args).fetchall()
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return {}
                raise
        out: dict[str, dict[str, int]] = {}
        for day, metric, total in rows:
            out.setdefault(day, {})[metric] = int(total)
        return out
