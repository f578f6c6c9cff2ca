"""Read side of the metrics projection (`projections.metrics.projector`, SQLite `metrics.db`): the
counts summed per UTC day, over every agent and namespace or over the ones named. A missing
database reads as no counts."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from projections.core.sqlite_reader import SqliteReader

DB_FILE = "metrics.db"
EVENTS_PREFIX = "events:"


class MetricsReader(SqliteReader):
    reads: ClassVar[tuple[str, ...]] = ("metrics",)

    def __init__(self, directory: Any) -> None:
        super().__init__(directory, DB_FILE)

    async def event_types(self) -> dict[str, int]:
        """Events folded so far, by type."""
        return await asyncio.to_thread(self._event_types)

    def _event_types(self) -> dict[str, int]:
        rows = self.fetch(f"SELECT metric, SUM(value) FROM counts WHERE metric >= ? AND metric < ? GROUP BY metric",
                          [EVENTS_PREFIX, EVENTS_PREFIX[:-1] + chr(ord(EVENTS_PREFIX[-1]) + 1)])
        return {metric[len(EVENTS_PREFIX):]: int(total) for metric, total in rows}

    async def daily(self, first_day: str, last_day: str, namespaces: list[str] | None = None
                    ) -> dict[str, dict[str, int]]:
        """{day: {metric: total}} for the days in [first_day, last_day] (ISO dates, UTC)."""
        return await asyncio.to_thread(self._daily, first_day, last_day, namespaces)

    def _daily(self, first_day: str, last_day: str, namespaces: list[str] | None) -> dict[str, dict[str, int]]:
        where, args = "day >= ? AND day <= ?", [first_day, last_day]
        if namespaces is not None:
            where += f" AND namespace IN ({', '.join('?' for _ in namespaces)})"
            args += namespaces
        rows = self.fetch(f"SELECT day, metric, SUM(value) FROM counts WHERE {where} GROUP BY day, metric", args)
        out: dict[str, dict[str, int]] = {}
        for day, metric, total in rows:
            out.setdefault(day, {})[metric] = int(total)
        return out
