"""A LAN replica's durable buffer of feedback votes recorded while its primary was unreachable.

One SQLite file in the replica's data dir (`<data-dir>/replica/outbox.sqlite`, synchronous=FULL: a
202 answer means the vote is on disk). Each row is one operation with its own id (the idempotency key
the primary appends it under, `commands.replica_ops`), sent oldest first, marked done once the
primary answered applied, duplicate or rejected. Done rows are kept for a day so that a client
retrying its request with the same `Idempotency-Key` is answered the same 202 instead of voting twice.
"""

from __future__ import annotations

import sqlite3
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from commands.errors import IdempotencyKeyReused

KEEP_DONE_MS = 24 * 3600 * 1000
FILE = Path("replica") / "outbox.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ops (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    op_id TEXT NOT NULL UNIQUE,
    agent_id TEXT NOT NULL,
    idem_key TEXT NOT NULL DEFAULT '',
    fingerprint TEXT NOT NULL DEFAULT '',
    body TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    done_ms INTEGER,
    outcome TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX IF NOT EXISTS ops_idem ON ops (agent_id, idem_key) WHERE idem_key != '';
CREATE INDEX IF NOT EXISTS ops_pending ON ops (done_ms, seq);
"""


@dataclass(frozen=True, slots=True)
class Buffered:
    op_id: str
    op: dict[str, Any]
    duplicate: bool = False     # the same Idempotency-Key was buffered before: nothing new was added


class Outbox:
    def __init__(self, data_dir: Path) -> None:
        path = data_dir / FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def add(self, op: dict[str, Any], *, agent_id: str, now_ms: int, idem_key: str = "",
            fingerprint: str = "") -> Buffered:
        """Buffer `op` (given an `op_id` here); with an Idempotency-Key seen before for this agent, the
        first one (IdempotencyKeyReused when its request differed)."""
        with self._lock:
            if idem_key:
                row = self._conn.execute("SELECT op_id, fingerprint, body FROM ops WHERE agent_id = ? AND idem_key = ?",
                                         (agent_id, idem_key)).fetchone()
                if row is not None:
                    if row[1] != fingerprint:
                        raise IdempotencyKeyReused(f"Idempotency-Key {idem_key!r} was used with another request",
                                                   {"idempotency_key": idem_key})
                    return Buffered(row[0], orjson.loads(row[2]), duplicate=True)
            op = {**op, "op_id": f"fb-{uuid.uuid4().hex}"}
            self._conn.execute(
                "INSERT INTO ops (op_id, agent_id, idem_key, fingerprint, body, created_ms) VALUES (?, ?, ?, ?, ?, ?)",
                (op["op_id"], agent_id, idem_key, fingerprint, orjson.dumps(op).decode(), now_ms))
            return Buffered(op["op_id"], op)

    def pending(self, limit: int = 100) -> list[dict[str, Any]]:
        """The operations not yet answered by the primary, oldest first."""
        with self._lock:
            rows = self._conn.execute("SELECT body FROM ops WHERE done_ms IS NULL ORDER BY seq LIMIT ?",
                                      (limit,)).fetchall()
        return [orjson.loads(r[0]) for r in rows]

    def done(self, outcomes: dict[str, str], now_ms: int) -> None:
        """Mark operations answered (`{op_id: applied|duplicate|rejected}`); forget done rows past a day."""
        with self._lock:
            self._conn.execute("BEGIN")
            self._conn.executemany("UPDATE ops SET done_ms = ?, outcome = ? WHERE op_id = ? AND done_ms IS NULL",
                                   [(now_ms, outcome, op_id) for op_id, outcome in outcomes.items()])
            self._conn.execute("DELETE FROM ops WHERE done_ms IS NOT NULL AND done_ms < ?", (now_ms - KEEP_DONE_MS,))
            self._conn.execute("COMMIT")

    def counts(self) -> dict[str, int]:
        with self._lock:
            pending, done = self._conn.execute(
                "SELECT COALESCE(SUM(done_ms IS NULL), 0), COALESCE(SUM(done_ms IS NOT NULL), 0) FROM ops").fetchone()
        return {"pending": int(pending), "done": int(done)}
