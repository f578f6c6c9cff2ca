"""Read side of the learning projection (`projections.learning.projector`, SQLite `learning.db`): the
memories' V-values (seed 6.3) and the skills (seed 6.5).

- `LearningReader`: exact reads (the skills and gaps endpoints, the crystallisation reaction, the gap
  trigger's repairs).
- `MemoryValues`: the V-values held in memory for the recall path (a dict lookup per candidate, as
  `projections.activity.reader.RecallCounts`), reloaded whole when the projection's change counter moves
  (only memories served by rewarded traces have one). Until a trace is rewarded it holds nothing and
  ranking is unchanged.
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
from typing import Any, ClassVar

from projections.core.sqlite_reader import SqliteReader
from projections.serving.followers import ProjectionFollower

DB_FILE = "learning.db"
SKILL_COLUMNS = ("name", "memory_id", "namespace", "content", "successes", "failures", "agent", "position",
                 "crystallized_ms", "trials", "last_trial_position")
VALUE_COLUMNS = ("memory_id", "v", "at_ms", "trace_id", "position")
GAP_COLUMNS = ("gap_id", "agent", "query", "gap_type", "queries", "namespaces", "min_scores", "suggestion",
               "evidence", "detected_ms", "position", "status", "repair", "filled_count", "memory_ids",
               "closed_position", "detail")
_GAP_JSON = ("queries", "namespaces", "min_scores", "evidence", "memory_ids")
GAP_STATUSES = ("open", "closed", "all")


class LearningReader(SqliteReader):
    reads: ClassVar[tuple[str, ...]] = ("learning",)

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, DB_FILE)

    def values(self, memory_ids: list[str] | None = None) -> dict[str, tuple[float, int]]:
        """memory id -> (V, the reward's time in ms), for the given ids (all when None) that have one."""
        if memory_ids is None:
            rows = self.fetch("SELECT memory_id, v, at_ms FROM memory_values")
        elif not memory_ids:
            return {}
        else:
            rows = self.fetch(f"SELECT memory_id, v, at_ms FROM memory_values WHERE memory_id IN "
                              f"({','.join('?' * len(memory_ids))})", memory_ids)
        return {mid: (float(v), int(at)) for mid, v, at in rows}

    def values_change(self) -> int:
        """A counter every change of `memory_values` moves (-1 before the first)."""
        rows = self.fetch("SELECT n FROM changes WHERE name = 'values'")
        return int(rows[0][0]) if rows else -1

    def skills(self) -> list[dict[str, Any]]:
        rows = self.fetch(f"SELECT {', '.join(SKILL_COLUMNS)} FROM skills ORDER BY name")
        return [dict(zip(SKILL_COLUMNS, r)) for r in rows]

    def skill(self, name: str) -> dict[str, Any] | None:
        rows = self.fetch(f"SELECT {', '.join(SKILL_COLUMNS)} FROM skills WHERE name = ?", (name,))
        return dict(zip(SKILL_COLUMNS, rows[0])) if rows else None

    def gaps(self, status: str = "all", agent: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
        """Gaps newest first (`status` open, closed or all; one agent's when `agent` is given)."""
        where, args = ["1 = 1"], []
        if status != "all":
            where.append("status = ?")
            args.append(status)
        if agent is not None:
            where.append("agent = ?")
            args.append(agent)
        rows = self.fetch(f"SELECT {', '.join(GAP_COLUMNS)} FROM gaps WHERE {' AND '.join(where)} "
                          f"ORDER BY detected_ms DESC, gap_id LIMIT ?", (*args, limit))
        return [_gap(r) for r in rows]

    def gap(self, gap_id: str) -> dict[str, Any] | None:
        rows = self.fetch(f"SELECT {', '.join(GAP_COLUMNS)} FROM gaps WHERE gap_id = ?", (gap_id,))
        return _gap(rows[0]) if rows else None

    def gap_counts(self, agent: str | None = None) -> tuple[int, int]:
        """(gaps detected, gaps closed), of one agent when given."""
        sql = "SELECT COUNT(*), COALESCE(SUM(status = 'closed'), 0) FROM gaps"
        rows = self.fetch(sql + (" WHERE agent = ?" if agent is not None else ""), (agent,) if agent else ())
        return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)

    def worldmodel(self) -> dict[str, Any] | None:
        """The latest world model: {entities, interactions, constraints, reason, at_ms, position}, or None."""
        rows = self.fetch("SELECT model, reason, at_ms, position FROM worldmodel WHERE id = 1")
        if not rows:
            return None
        model, reason, at_ms, position = rows[0]
        return {**orjson.loads(model), "reason": reason, "at_ms": int(at_ms), "position": position}

    def skill_of(self, memory_id: str) -> str | None:
        rows = self.fetch("SELECT name FROM skills WHERE memory_id = ?", (memory_id,))
        return rows[0][0] if rows else None


def _gap(row: tuple) -> dict[str, Any]:
    gap = dict(zip(GAP_COLUMNS, row))
    for col in _GAP_JSON:
        gap[col] = orjson.loads(gap[col])
    return gap


class MemoryValues(ProjectionFollower):
    """V-values in memory (see the module doc); `values(ids)` never blocks on SQLite."""

    name = "memory_values"

    def __init__(self, reader: LearningReader, max_age_s: float = 1.0) -> None:
        super().__init__(max_age_s)
        self.reader = reader
        self._values: dict[str, tuple[float, int]] = {}

    def values(self, memory_ids: list[str]) -> dict[str, tuple[float, int]]:
        self._schedule_refresh()
        held = self._values
        if not held:
            return {}
        return {mid: held[mid] for mid in memory_ids if mid in held}

    def _read(self, since: int) -> tuple[dict[str, tuple[float, int]], int] | None:
        change = self.reader.values_change()
        if change == since:
            return None
        return self.reader.values(), change

    def _forget(self) -> None:
        self._values = {}

    def _apply(self, changes: tuple[dict[str, tuple[float, int]], int]) -> None:
        values, change = changes
        self._values = {sys.intern(mid): v for mid, v in values.items()}
        self._change = change
