"""Read side of the conflicts projection (`projections.conflicts.projector`, SQLite `conflicts.db`).

`ConflictsReader.page` lists the conflicts whose two memories both lie in namespaces the caller may
read, newest first; `get` reads one. A missing database reads as no conflicts.
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any, ClassVar

from projections.core.errors import InvalidQuery
from projections.core.sqlite_reader import SqliteReader

DB_FILE = "conflicts.db"
COLUMNS = ("conflict_id", "namespace", "memory_a", "memory_b", "namespace_a", "namespace_b", "kind", "confidence",
           "evidence", "detected_at", "agent", "position", "status", "strategy", "rule", "winner", "loser",
           "resolved_at", "resolved_by", "winner_source", "loser_source")
STATUSES = ("open", "resolved", "all")
MAX_LIMIT = 1000


def shaped(row: tuple) -> dict[str, Any]:
    r = dict(zip(COLUMNS, row))
    return {"conflict_id": r["conflict_id"], "kind": r["kind"], "confidence": r["confidence"],
            "status": r["status"], "memory_ids": [r["memory_a"], r["memory_b"]],
            "namespaces": [r["namespace_a"], r["namespace_b"]], "evidence": r["evidence"],
            "detected_at": r["detected_at"], "detected_by": r["agent"], "position": r["position"],
            "resolution": None if r["status"] == "open" else {
                "strategy": r["strategy"], "rule": r["rule"], "winner": r["winner"], "loser": r["loser"],
                "resolved_at": r["resolved_at"], "resolved_by": r["resolved_by"]}}


#: A person's verdicts (rule "") that chose a winner count toward the learned profile.
PROFILE_STRATEGIES = ("ask_user", "latest_wins", "primary_wins", "auto_merge")


class ConflictsReader(SqliteReader):
    reads: ClassVar[tuple[str, ...]] = ("conflicts",)

    def __init__(self, directory: Any) -> None:
        super().__init__(directory, DB_FILE)

    async def page(self, readable: list[str] | None, status: str = "open", limit: int = 100,
                   offset: int = 0) -> tuple[list[dict[str, Any]], int]:
        if status not in STATUSES:
            raise InvalidQuery(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
        if not 0 < limit <= MAX_LIMIT:
            raise InvalidQuery(f"limit must be in 1..{MAX_LIMIT}, got {limit}")
        if offset < 0:
            raise InvalidQuery(f"offset must be >= 0, got {offset}")
        return await asyncio.to_thread(self._page, readable, status, limit, offset)

    def _page(self, readable: list[str] | None, status: str, limit: int,
              offset: int) -> tuple[list[dict[str, Any]], int]:
        """`readable` None: every namespace (the admin)."""
        if readable is not None and not readable:
            return [], 0
        where, args = "1 = 1", []
        if readable is not None:
            marks = ", ".join("?" for _ in readable)
            where = f"namespace_a IN ({marks}) AND namespace_b IN ({marks})"
            args = [*readable, *readable]
        if status != "all":
            where += " AND status = ?"
            args.append(status)
        def run(conn: sqlite3.Connection) -> tuple[list[tuple], int]:
            total = conn.execute(f"SELECT COUNT(*) FROM conflicts WHERE {where}", args).fetchone()[0]
            return conn.execute(f"SELECT {', '.join(COLUMNS)} FROM conflicts WHERE {where} "
                                "ORDER BY detected_at DESC, conflict_id LIMIT ? OFFSET ?",
                                [*args, limit, offset]).fetchall(), int(total)

        nothing: tuple[list[tuple], int] = ([], 0)
        rows, total = self.read(run, nothing)
        return [shaped(r) for r in rows], total

    async def profile(self, kind: str, source_a: str, source_b: str) -> dict[str, int]:
        """How often people settled a `kind` conflict between these two sources for each of them:
        {source: wins} over the verdicts an agent or admin gave (not the automatic rules')."""
        return await asyncio.to_thread(self._profile, kind, source_a, source_b)

    def _profile(self, kind: str, source_a: str, source_b: str) -> dict[str, int]:
        marks = ", ".join("?" for _ in PROFILE_STRATEGIES)
        rows = self.fetch(
            f"SELECT winner_source, COUNT(*) FROM conflicts WHERE status = 'resolved' AND rule = '' AND kind = ? "
            f"AND strategy IN ({marks}) AND ((winner_source = ? AND loser_source = ?) OR "
            "(winner_source = ? AND loser_source = ?)) GROUP BY winner_source",
            (kind, *PROFILE_STRATEGIES, source_a, source_b, source_b, source_a))
        return {src: int(n) for src, n in rows}

    async def get(self, conflict_id: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self._get, conflict_id)

    def _get(self, conflict_id: str) -> dict[str, Any] | None:
        rows = self.fetch(f"SELECT {', '.join(COLUMNS)} FROM conflicts WHERE conflict_id = ?", (conflict_id,))
        return shaped(rows[0]) if rows else None

    def open_count(self, memory_id: str) -> int:
        """Open conflicts `memory_id` is part of (a skill cannot crystallise from a disputed pattern)."""
        rows = self.fetch("SELECT (SELECT COUNT(*) FROM conflicts WHERE memory_a = ? AND status = 'open') + "
                          "(SELECT COUNT(*) FROM conflicts WHERE memory_b = ? AND status = 'open')",
                          (memory_id, memory_id))
        return int(rows[0][0]) if rows else 0
