"""The synonyms projector: `synonym.added` events -> SQLite `<dir>/synonyms.db` (WAL).

Tables:
- `additions` — one row per event (position, namespace, term, synonyms as written): the listing.
- `pairs` — the symmetric relation used for query expansion: for every addition, each ordered pair
  (x, y) of distinct members of {term} ∪ synonyms, keyed by (namespace, key(x), key(y)) where key
  is `normalize_term`; the first addition's spelling of y is kept. Additions are not merged
  transitively (see `projections/synonyms/reader.py`).
- `checkpoint` — the position of the last applied event.

Rows and the checkpoint are written in ONE transaction (`BEGIN IMMEDIATE`), and the checkpoint is
re-read inside it, so a batch applied twice (or by two writers) changes nothing, and a crash leaves
either the whole batch or none of it. Reads (`load_checkpoint`, `digest`) never create files.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import orjson

from events import positions
from events.catalogue import SynonymAdded
from events.envelope import Event
from projections.core.digest import Digester
from projections.synonyms.reader import DB_FILE, normalize_term
from projections.core.projector import RECALL_AUDIT
from projections.core.sqlite_projection import SqliteProjection

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS additions (
    position TEXT PRIMARY KEY, ms INTEGER NOT NULL, seq INTEGER NOT NULL,
    namespace TEXT NOT NULL, term TEXT NOT NULL, synonyms TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pairs (
    namespace TEXT NOT NULL, term_key TEXT NOT NULL, synonym_key TEXT NOT NULL,
    synonym TEXT NOT NULL, position TEXT NOT NULL,
    PRIMARY KEY (namespace, term_key, synonym_key));
"""


def members(event: SynonymAdded) -> list[tuple[str, str]]:
    """(key, as written) of {term} ∪ synonyms, distinct by key, in the order given."""
    out: dict[str, str] = {}
    for text in (event.term, *event.synonyms):
        key = normalize_term(text)
        if key and key not in out:
            out[key] = text.strip()
    return list(out.items())


class SynonymsProjector(SqliteProjection):
    name = "synonyms"
    ignored_types = RECALL_AUDIT   # counted by the activity, graph and metrics projections only
    schema = _SCHEMA
    schema_version = SCHEMA_VERSION

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, DB_FILE)

    def _fold_batch(self, conn: sqlite3.Connection, events: list[Event]) -> None:
        for ev in events:
            if isinstance(ev.data, SynonymAdded):
                self._fold(conn, ev)

    @staticmethod
    def _fold(conn: sqlite3.Connection, ev: Event) -> None:
        data: SynonymAdded = ev.data
        group = members(data)
        if len(group) < 2:
            return
        ms, seq = positions.parse(ev.position)
        conn.execute("INSERT OR IGNORE INTO additions (position, ms, seq, namespace, term, synonyms) "
                     "VALUES (?, ?, ?, ?, ?, ?)",
                     (ev.position, ms, seq, data.namespace, group[0][1],
                      orjson.dumps([text for _, text in group[1:]]).decode()))
        conn.executemany(
            "INSERT OR IGNORE INTO pairs (namespace, term_key, synonym_key, synonym, position) VALUES (?, ?, ?, ?, ?)",
            [(data.namespace, a, b, text, ev.position) for a, _ in group for b, text in group if a != b])

    def read_scope(self, event: Event) -> str | None:
        """Generational: a synonym changes lexical search in its namespace."""
        return event.data.namespace if isinstance(event.data, SynonymAdded) else None

    async def digest(self) -> str:
        return await asyncio.to_thread(self._digest)

    def _digest(self) -> str:
        """Rows as of the checkpoint, sorted by key: additions by (ms, seq), pairs by their key."""
        d = Digester()
        with self._snapshot(
                "SELECT position, namespace, term, synonyms FROM additions ORDER BY ms, seq",
                "SELECT namespace, term_key, synonym_key, synonym, position FROM pairs "
                "ORDER BY namespace, term_key, synonym_key") as (adds, pairs):
            for pos, ns, term, syns in adds:
                d.add({"t": "addition", "position": pos, "namespace": ns, "term": term,
                       "synonyms": orjson.loads(syns)})
            for ns, term_key, syn_key, syn, pos in pairs:
                d.add({"t": "pair", "namespace": ns, "term_key": term_key, "synonym_key": syn_key, "synonym": syn,
                       "position": pos})
        return d.hexdigest()
