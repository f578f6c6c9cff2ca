"""The consolidation projector: deep-consolidation runs, step and trigger states, calibrated decay
rates and notices -> SQLite `<dir>/consolidation.db` (seed 3.5 flow 5, 6.4).

- `consolidation.completed` -> a run row (its steps, clusters, patterns and report), each step's
  failures in a row (a `failed` step counts one more, an `ok` or `not_run` one starts over), and the
  calibrated decay rates (the latest run that calibrated wins);
- `consolidation.step_disabled` / `step_enabled` -> the step's switch;
- `trigger.fired` / `failed` / `paused` / `resumed` -> the trigger's state: when it last fired and
  was last tried (its cooldown counts from the scheduler-clock times the events carry), its failures
  in a row, paused or not, and the marks the next evaluation counts from;
- `notice.raised` -> the notices;
- `memory.committed` by a distillation extractor -> the distilled-memory count the `backtrace` and
  `consolidation` triggers compare with their marks.

Rows and the checkpoint are written in one transaction (`projections.core.sqlite_projection`);
every value comes from the events.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import orjson

from events.catalogue import (
    ConsolidationCompleted, ConsolidationStepDisabled, ConsolidationStepEnabled, MemoryCommitted, NoticeRaised,
    TriggerFailed, TriggerFired, TriggerPaused, TriggerResumed,
)
from events.envelope import Event
from events.hlc import iso_from_ms
from projections.consolidation.reader import DB_FILE, TABLES, is_distilled
from projections.core.digest import Digester
from projections.core.projector import RECALL_AUDIT
from projections.core.sqlite_projection import SqliteProjection

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, position TEXT NOT NULL, at_ms INTEGER NOT NULL, trigger TEXT NOT NULL,
    steps TEXT NOT NULL, clusters TEXT NOT NULL, patterns TEXT NOT NULL, report TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS idx_runs_position ON runs (position);
CREATE TABLE IF NOT EXISTS steps (
    step TEXT PRIMARY KEY, failures INTEGER NOT NULL, disabled INTEGER NOT NULL, last_status TEXT NOT NULL,
    last_error TEXT NOT NULL, last_run TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS decay_rates (
    decay_class TEXT PRIMARY KEY, base REAL NOT NULL, rate REAL NOT NULL, fitted REAL, samples INTEGER NOT NULL,
    status TEXT NOT NULL, run_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS triggers (
    name TEXT PRIMARY KEY, last_fired_ms INTEGER NOT NULL, last_attempt_ms INTEGER NOT NULL, fired INTEGER NOT NULL,
    failures INTEGER NOT NULL, paused INTEGER NOT NULL, paused_reason TEXT NOT NULL, last_error TEXT NOT NULL,
    marks TEXT NOT NULL, last_result TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notices (
    position TEXT PRIMARY KEY, at TEXT NOT NULL, kind TEXT NOT NULL, subject TEXT NOT NULL, message TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


def _json(value: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


class ConsolidationProjector(SqliteProjection):
    name = "consolidation"
    ignored_types = RECALL_AUDIT   # counted by the activity, graph and metrics projections only
    schema = _SCHEMA
    schema_version = SCHEMA_VERSION

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, DB_FILE)

    def _fold_batch(self, conn: sqlite3.Connection, events: list[Event]) -> None:
        for ev in events:
            d = ev.data
            if isinstance(d, MemoryCommitted):
                if is_distilled(d.extractor):
                    conn.execute("INSERT INTO counters VALUES ('distilled', 1) "
                                 "ON CONFLICT (name) DO UPDATE SET value = value + 1")
            elif isinstance(d, ConsolidationCompleted):
                _run(conn, ev.position, d)
            elif isinstance(d, ConsolidationStepDisabled):
                _step(conn, d.step)
                conn.execute("UPDATE steps SET disabled = 1, last_error = ? WHERE step = ?", (d.error, d.step))
            elif isinstance(d, ConsolidationStepEnabled):
                _step(conn, d.step)
                conn.execute("UPDATE steps SET disabled = 0, failures = 0 WHERE step = ?", (d.step,))
            elif isinstance(d, (TriggerFired, TriggerFailed, TriggerPaused, TriggerResumed)):
                _trigger(conn, d)
            elif isinstance(d, NoticeRaised):
                conn.execute("INSERT OR IGNORE INTO notices VALUES (?, ?, ?, ?, ?)",
                             (ev.position, iso_from_ms(ev.wall_ms), d.kind, d.subject, d.message))

    def read_scope(self, event: Event) -> str | None:
        """Generational: nothing here changes a recall's results."""
        return None

    async def digest(self) -> str:
        return await asyncio.to_thread(self._digest)

    def _digest(self) -> str:
        d = Digester()
        with self._snapshot(*(f"SELECT * FROM {table} ORDER BY 1" for table in TABLES)) as snapshots:
            for table, rows in zip(TABLES, snapshots):
                for row in rows:
                    d.add({"table": table, "row": list(row)})
        return d.hexdigest()


def _run(conn: sqlite3.Connection, position: str, d: ConsolidationCompleted) -> None:
    conn.execute("INSERT OR IGNORE INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                 (d.run_id, position, int(d.at_ms), d.trigger, _json(list(d.steps)), _json(list(d.clusters)),
                  _json(list(d.patterns)), _json(d.report or {})))
    for entry in d.steps:
        step, status = str(entry.get("step", "")), str(entry.get("status", ""))
        if not step:
            continue
        _step(conn, step)
        if status == "failed":
            conn.execute("UPDATE steps SET failures = failures + 1, last_status = ?, last_error = ?, last_run = ? "
                         "WHERE step = ?", (status, str(entry.get("error", ""))[:500], d.run_id, step))
        elif status in ("ok", "not_run"):
            conn.execute("UPDATE steps SET failures = 0, last_status = ?, last_run = ? WHERE step = ?",
                         (status, d.run_id, step))
        else:
            conn.execute("UPDATE steps SET last_status = ?, last_run = ? WHERE step = ?", (status, d.run_id, step))
    for r in d.decay_rates:
        fitted = r.get("fitted")
        conn.execute("INSERT OR REPLACE INTO decay_rates VALUES (?, ?, ?, ?, ?, ?, ?)",
                     (str(r["decay_class"]), float(r["base"]), float(r["rate"]),
                      None if fitted is None else float(fitted), int(r.get("samples", 0)), str(r.get("status", "")),
                      d.run_id))


def _step(conn: sqlite3.Connection, step: str) -> None:
    conn.execute("INSERT OR IGNORE INTO steps VALUES (?, 0, 0, '', '', '')", (step,))


def _trigger(conn: sqlite3.Connection, d: TriggerFired | TriggerFailed | TriggerPaused | TriggerResumed) -> None:
    conn.execute("INSERT OR IGNORE INTO triggers VALUES (?, 0, 0, 0, 0, 0, '', '', '{}', '{}')", (d.name,))
    if isinstance(d, TriggerFired):
        conn.execute("UPDATE triggers SET last_fired_ms = ?, last_attempt_ms = ?, fired = fired + 1, failures = 0, "
                     "marks = ?, last_result = ? WHERE name = ?",
                     (int(d.at_ms), int(d.at_ms), _json(d.marks or {}), _json(d.result or {}), d.name))
    elif isinstance(d, TriggerFailed):
        conn.execute("UPDATE triggers SET last_attempt_ms = ?, failures = failures + 1, last_error = ? WHERE name = ?",
                     (int(d.at_ms), d.error[:500], d.name))
    elif isinstance(d, TriggerPaused):
        conn.execute("UPDATE triggers SET paused = 1, paused_reason = ? WHERE name = ?", (d.reason[:500], d.name))
    else:
        conn.execute("UPDATE triggers SET paused = 0, paused_reason = '', failures = 0 WHERE name = ?", (d.name,))
