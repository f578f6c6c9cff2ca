"""The conflicts projector: `conflict.detected` / `conflict.resolved` -> SQLite `<dir>/conflicts.db`.

One row per conflict (seed 3.3.2): its two memories and their namespaces (what `GET
/api/v1/conflicts` filters the caller's access on), kind, confidence and evidence, when it was
detected, and — once settled — the strategy, rule, winner and loser (and their sources: the learned
profile of verdicts, `ConflictsReader.profile`) and when. Rows and the
checkpoint are written in one transaction (`projections.core.sqlite_projection`); every value comes
from the events, times from their HLC.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from events.catalogue import ConflictDetected, ConflictResolved
from events.envelope import Event
from events.hlc import iso_from_ms
from projections.conflicts.reader import COLUMNS, DB_FILE
from projections.core.digest import Digester
from projections.core.projector import RECALL_AUDIT
from projections.core.sqlite_projection import SqliteProjection

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS conflicts (
    conflict_id TEXT PRIMARY KEY, namespace TEXT NOT NULL,
    memory_a TEXT NOT NULL, memory_b TEXT NOT NULL, namespace_a TEXT NOT NULL, namespace_b TEXT NOT NULL,
    kind TEXT NOT NULL, confidence REAL NOT NULL, evidence TEXT NOT NULL, detected_at TEXT NOT NULL,
    agent TEXT NOT NULL, position TEXT NOT NULL, status TEXT NOT NULL, strategy TEXT NOT NULL,
    rule TEXT NOT NULL, winner TEXT NOT NULL, loser TEXT NOT NULL, resolved_at TEXT NOT NULL,
    resolved_by TEXT NOT NULL, winner_source TEXT NOT NULL, loser_source TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS idx_conflicts_status ON conflicts (status, detected_at);
CREATE INDEX IF NOT EXISTS idx_conflicts_a ON conflicts (memory_a);
CREATE INDEX IF NOT EXISTS idx_conflicts_b ON conflicts (memory_b);
CREATE INDEX IF NOT EXISTS idx_conflicts_profile ON conflicts (kind, rule, winner_source, loser_source);
"""


class ConflictsProjector(SqliteProjection):
    name = "conflicts"
    ignored_types = RECALL_AUDIT   # counted by the activity, graph and metrics projections only
    schema = _SCHEMA
    schema_version = SCHEMA_VERSION

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, DB_FILE)

    def _fold_batch(self, conn: sqlite3.Connection, events: list[Event]) -> None:
        for ev in events:
            d = ev.data
            at = iso_from_ms(ev.wall_ms)
            if isinstance(d, ConflictDetected):
                ids = list(dict.fromkeys(d.memory_ids))[:2]
                if len(ids) < 2:
                    continue
                nss = list(d.namespaces) + [d.namespace] * 2
                conn.execute(
                    "INSERT OR IGNORE INTO conflicts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'open', '', '', '', '', "
                    "'', '', '', '')",
                    (d.conflict_id, d.namespace, ids[0], ids[1], nss[0], nss[1], d.kind, float(d.confidence),
                     d.evidence, at, ev.agent, ev.position))
            elif isinstance(d, ConflictResolved):
                conn.execute(
                    "UPDATE conflicts SET status = 'resolved', strategy = ?, rule = ?, winner = ?, loser = ?, "
                    "resolved_at = ?, resolved_by = ?, winner_source = ?, loser_source = ? "
                    "WHERE conflict_id = ? AND status = 'open'",
                    (d.strategy, d.rule, d.winner, d.loser, at, ev.agent, d.winner_source, d.loser_source,
                     d.conflict_id))

    def read_scope(self, event: Event) -> str | None:
        """Generational: conflicts change no recall."""
        return None

    async def digest(self) -> str:
        return await asyncio.to_thread(self._digest)

    def _digest(self) -> str:
        d = Digester()
        with self._snapshot(f"SELECT {', '.join(COLUMNS)} FROM conflicts ORDER BY conflict_id") as (rows,):
            for row in rows:
                d.add(dict(zip(COLUMNS, row)))
        return d.hexdigest()
