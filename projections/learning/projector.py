"""The learning projector: what the self-improvement loop decided -> SQLite `<dir>/learning.db`.

- `trace.rewarded` (seed 6.3): each valued memory's V, the reward's time, trace and position
  (`memory_values`, one row per memory: the latest reward that reached it);
- `skill.crystallized` / `skill.trial_recorded` (seed 6.5): one row per skill, its evidence counts
  (successes, failures: the Beta posterior is derived from them, `commands.learning.skills`);
- `gap.detected` / `gap.filled` (seed 3.2.2): one row per knowledge gap, open until filled;
- `worldmodel.updated` (seed 6.6): the latest world model, whole.

Rows, the change counter the gateway's `MemoryValues` follows and the checkpoint are written in one
transaction. It ignores the recall audits (the activity projection records traced recalls).
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import orjson

from events.catalogue import (
    GapDetected, GapFilled, SkillCrystallized, SkillTrialRecorded, TraceRewarded, WorldModelUpdated,
)
from events.envelope import Event
from projections.core.digest import Digester
from projections.core.projector import RECALL_AUDIT
from projections.core.sqlite_projection import SqliteProjection
from projections.learning.reader import DB_FILE, GAP_COLUMNS, SKILL_COLUMNS, VALUE_COLUMNS

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_values (memory_id TEXT PRIMARY KEY, v REAL NOT NULL, at_ms INTEGER NOT NULL,
    trace_id TEXT NOT NULL, position TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS skills (name TEXT PRIMARY KEY, memory_id TEXT NOT NULL, namespace TEXT NOT NULL,
    content TEXT NOT NULL, successes INTEGER NOT NULL, failures INTEGER NOT NULL, agent TEXT NOT NULL,
    position TEXT NOT NULL, crystallized_ms INTEGER NOT NULL, trials INTEGER NOT NULL DEFAULT 0,
    last_trial_position TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS idx_skills_memory ON skills (memory_id);
CREATE TABLE IF NOT EXISTS changes (name TEXT PRIMARY KEY, n INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS gaps (gap_id TEXT PRIMARY KEY, agent TEXT NOT NULL, query TEXT NOT NULL,
    gap_type TEXT NOT NULL, queries TEXT NOT NULL, namespaces TEXT NOT NULL, min_scores TEXT NOT NULL,
    suggestion TEXT NOT NULL, evidence TEXT NOT NULL, detected_ms INTEGER NOT NULL, position TEXT NOT NULL,
    status TEXT NOT NULL, repair TEXT NOT NULL, filled_count INTEGER NOT NULL, memory_ids TEXT NOT NULL,
    closed_position TEXT NOT NULL, detail TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS idx_gaps_status ON gaps (status, position);
CREATE TABLE IF NOT EXISTS worldmodel (id INTEGER PRIMARY KEY CHECK (id = 1), model TEXT NOT NULL,
    reason TEXT NOT NULL, at_ms INTEGER NOT NULL, position TEXT NOT NULL);
"""


class LearningProjector(SqliteProjection):
    name = "learning"
    ignored_types = RECALL_AUDIT
    schema = _SCHEMA
    schema_version = SCHEMA_VERSION

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, DB_FILE)

    def _fold_batch(self, conn: sqlite3.Connection, events: list[Event]) -> None:
        values_moved = False
        for ev in events:
            d = ev.data
            if isinstance(d, TraceRewarded):
                conn.executemany(
                    "INSERT INTO memory_values VALUES (?, ?, ?, ?, ?) ON CONFLICT (memory_id) DO UPDATE SET "
                    "v = excluded.v, at_ms = excluded.at_ms, trace_id = excluded.trace_id, position = excluded.position",
                    [(str(x["memory_id"]), float(x["v"]), int(d.at_ms), d.trace_id, ev.position) for x in d.values])
                values_moved = values_moved or bool(d.values)
            elif isinstance(d, SkillCrystallized):
                # one skill per memory: a second crystallisation (decided before the first was folded) is a no-op
                conn.execute("INSERT OR IGNORE INTO skills SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, '' "
                             "WHERE NOT EXISTS (SELECT 1 FROM skills WHERE memory_id = ?)",
                             (d.name, d.memory_id, d.namespace, d.content, int(d.successes), int(d.failures),
                              ev.agent, ev.position, ev.wall_ms, d.memory_id))
            elif isinstance(d, GapDetected):
                conn.execute("INSERT OR IGNORE INTO gaps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'open', '', 0, '[]', '', '')",
                             (d.gap_id, d.agent, d.query, d.gap_type, _json(d.queries), _json(d.namespaces),
                              _json(d.min_scores), d.suggestion, _json(d.evidence or {}), int(d.at_ms), ev.position))
            elif isinstance(d, GapFilled):
                conn.execute("UPDATE gaps SET status = 'closed', repair = ?, filled_count = ?, memory_ids = ?, "
                             "closed_position = ?, detail = ? WHERE gap_id = ? AND status = 'open'",
                             (d.repair, int(d.filled_count), _json(d.memory_ids), ev.position, d.detail, d.gap_id))
            elif isinstance(d, WorldModelUpdated):
                model = {"entities": d.entities, "interactions": d.interactions, "constraints": d.constraints}
                conn.execute("INSERT INTO worldmodel VALUES (1, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                             "model = excluded.model, reason = excluded.reason, at_ms = excluded.at_ms, "
                             "position = excluded.position", (_json(model), d.reason, int(d.at_ms), ev.position))
            elif isinstance(d, SkillTrialRecorded):
                column = "successes" if d.success else "failures"
                conn.execute(f"UPDATE skills SET {column} = {column} + 1, trials = trials + 1, "
                             "last_trial_position = ? WHERE name = ?", (ev.position, d.name))
        if values_moved:
            conn.execute("INSERT INTO changes VALUES ('values', 1) ON CONFLICT (name) DO UPDATE SET n = n + 1")

    def read_scope(self, event: Event) -> str | None:
        """Generational: none. A V-value moves rankings as recall counts do, without invalidating cached
        answers (they expire within the search cache's TTL; `cache: false` sees it at once)."""
        return None

    async def digest(self) -> str:
        return await asyncio.to_thread(self._digest)

    def _digest(self) -> str:
        d = Digester()
        with self._snapshot(f"SELECT {', '.join(VALUE_COLUMNS)} FROM memory_values ORDER BY memory_id",
                            f"SELECT {', '.join(SKILL_COLUMNS)} FROM skills ORDER BY name",
                            f"SELECT {', '.join(GAP_COLUMNS)} FROM gaps ORDER BY gap_id",
                            "SELECT model, reason, at_ms, position FROM worldmodel") as (values, skills, gaps, world):
            for row in values:
                d.add({"t": "value", **dict(zip(VALUE_COLUMNS, row))})
            for row in skills:
                d.add({"t": "skill", **dict(zip(SKILL_COLUMNS, row))})
            for row in gaps:
                d.add({"t": "gap", **dict(zip(GAP_COLUMNS, row))})
            for model, reason, at_ms, pos in world:
                d.add({"t": "worldmodel", "model": model, "reason": reason, "at_ms": at_ms, "position": pos})
        return d.hexdigest()


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()
