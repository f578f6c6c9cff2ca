"""CO_OCCURS edges: the graph projector's fold of `recall.served` and the lean table it writes.

Every recall folds into ten CO_OCCURS edges (the pairs of its top 5), so they live in a table of their
own, `graph_cooccurs` (schema: `projections.graph.schema`): keyed (source_id, target_id) WITHOUT
ROWID, two indexes (by source and by target, heaviest first), the last co-recall time (`last_at`) on
the row; no TEXT id (the view `graph_edges` computes `CO_OCCURS:<source>:<target>`), no namespace
index, no trigger on the write path. Schema 2 kept
them in `graph_edges` (five B-trees and a trigger per edge) with their `last_at` in `graph_cooccur`.

- `cooccurs_log` numbers every change of a CO_OCCURS edge's weight (weight -1: deleted) for the gateway's
  prefetch partners (`projections.serving.prefetch`): the fold and the archival write their entries
  themselves, a trigger logs deletions (whatever the statement); only COOCCURS_LOG_KEEP entries are kept.
  Not graph state: the digest leaves it out.
- `graph_cooccur_gone`: the last co-recall of the edges a memory's deletion removed, until the next prune
  (schema 2's `graph_cooccur` kept those rows that long: the digest shows them, so they are kept too).
- An edge id with more than one reading (memory ids may hold ':') is taken, in a prune, as its first
  stored reading; schema 2 had one row for `CO_OCCURS:a:b:c` whether a:b -> c or a -> b:c, this two.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from itertools import combinations

from events.vocabulary import SHARED_NAMESPACE

CO_RECALL_TOP = 5
PREFIX = "CO_OCCURS:"
COOCCURS_LOG_KEEP = 200_000
COOCCURS_ID = "'CO_OCCURS:' || source_id || ':' || target_id"
COOCCURS_SCHEMA = """
CREATE TABLE IF NOT EXISTS cooccurs_log (change INTEGER PRIMARY KEY, source_id TEXT NOT NULL,
    target_id TEXT NOT NULL, weight REAL NOT NULL, namespace TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS cooccurs_deleted AFTER DELETE ON graph_cooccurs BEGIN
    INSERT INTO cooccurs_log (source_id, target_id, weight, namespace)
        VALUES (OLD.source_id, OLD.target_id, -1, OLD.namespace); END;
CREATE TABLE IF NOT EXISTS graph_cooccur_gone (edge_id TEXT PRIMARY KEY, last_at TEXT NOT NULL) WITHOUT ROWID;
"""
#: the digest's `cooccur` rows (edge id, last co-recall), as schema 2's `graph_cooccur` held them
DIGEST_SQL = (f"SELECT {COOCCURS_ID}, last_at FROM graph_cooccurs WHERE last_at IS NOT NULL "
              "UNION ALL SELECT edge_id, last_at FROM graph_cooccur_gone ORDER BY 1")


def co_recalled(conn: sqlite3.Connection, recalls: list[tuple[list[str], str]], *, log: bool = True) -> None:
    """Fold a run of `recall.served` (each: its top memory ids, its time), in order, as if one by one.

    Every recall of a known memory counts one; every pair of a recall's known top memories gets one
    more piece of evidence and weight = evidence / min(the two recall counts at that moment). The
    run is simulated in memory and each touched row written once: a batch folds to exactly what the
    same events give one at a time (live tailing and replays agree), with a few statements per
    batch instead of ~25 per recall. `log=False`: the writes are not entered in `cooccurs_log` (an
    offline rebuild: nobody follows it, and a gateway resets its view when the rebuilt graph replaces
    the live one).
    """
    ids = list(dict.fromkeys(m for top, _ in recalls for m in top))
    known = dict(select_in(conn, "SELECT id, namespace FROM graph_nodes WHERE id IN ({})", ids))
    counts = dict(select_in(conn, "SELECT memory_id, count FROM graph_recalls WHERE memory_id IN ({})",
                            [m for m in ids if m in known]))
    tops, pairs = [], {}
    for top, at in recalls:
        top = sorted(m for m in top if m in known)
        tops.append((top, at))
        for a, b in combinations(top, 2):
            if (a, b) not in pairs:
                # the edge lives with a private endpoint when there is one (seed 2.5.6: source's namespace)
                pairs[(a, b)] = (b, a) if known[a] == SHARED_NAMESPACE and known[b] != SHARED_NAMESPACE else (a, b)
    had = {(s, t): (n, ns) for s, t, n, ns in _existing(conn, list(pairs.values()))}
    edges: dict[tuple[str, str], list] = {}     # (source, target) -> [weight, namespace, evidence, created_at, last_at]
    for top, at in tops:
        for m in top:
            counts[m] = counts.get(m, 0) + 1
        for a, b in combinations(top, 2):
            key = pairs[(a, b)]
            seen = edges.get(key)
            if seen is None:
                evidence, ns = had.get(key) or (0, known[key[0]])
                # an existing edge keeps its namespace and creation time (the upsert below leaves them)
                seen = edges[key] = [0.0, ns, evidence or 0, at, at]
            seen[2] += 1
            seen[0] = min(1.0, seen[2] * 1.0 / min(counts[a], counts[b]))
            seen[4] = at
    conn.executemany("INSERT INTO graph_recalls (memory_id, count) VALUES (?, ?) "
                     "ON CONFLICT (memory_id) DO UPDATE SET count = excluded.count",
                     [(m, counts[m]) for m in ids if m in known])
    conn.executemany(
        "INSERT INTO graph_cooccurs (source_id, target_id, weight, namespace, evidence_count, created_at, last_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source_id, target_id) DO UPDATE SET "
        "weight = excluded.weight, evidence_count = excluded.evidence_count, last_at = excluded.last_at",
        [(s, t, *e) for (s, t), e in edges.items()])
    if log:
        conn.executemany("INSERT INTO cooccurs_log (source_id, target_id, weight, namespace) VALUES (?, ?, ?, ?)",
                         [(s, t, e[0], e[1]) for (s, t), e in edges.items()])
    if conn.execute("SELECT 1 FROM graph_cooccur_gone LIMIT 1").fetchone() is not None:
        # an edge made again: its last co-recall is the new one (schema 2 updated the one row)
        conn.executemany("DELETE FROM graph_cooccur_gone WHERE edge_id = ?",
                         [(f"{PREFIX}{s}:{t}",) for s, t in edges if (s, t) not in had])


def trim_log(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM cooccurs_log WHERE change <= (SELECT MAX(change) FROM cooccurs_log) - ?",
                 (COOCCURS_LOG_KEEP,))


def remove_touching(conn: sqlite3.Connection, node: str, *, keep_last_at: bool) -> None:
    """Delete the CO_OCCURS edges of `node` (either end); `keep_last_at`: their last co-recall stays
    (in `graph_cooccur_gone`) until the next prune, as schema 2 left it."""
    if keep_last_at:
        conn.execute(f"INSERT OR REPLACE INTO graph_cooccur_gone (edge_id, last_at) SELECT {COOCCURS_ID}, last_at "
                     "FROM graph_cooccurs WHERE (source_id = ? OR target_id = ?) AND last_at IS NOT NULL", (node, node))
    conn.execute("DELETE FROM graph_cooccurs WHERE source_id = ? OR target_id = ?", (node, node))


def keys_of(conn: sqlite3.Connection, edge_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
    """The stored (source, target) of each CO_OCCURS edge id among `edge_ids` (others left out)."""
    out: dict[str, tuple[str, str]] = {}
    for eid in sorted(edge_ids):
        if eid.startswith(PREFIX):
            rest = eid[len(PREFIX):]
            found = _existing(conn, [(rest[:i], rest[i + 1:]) for i, c in enumerate(rest) if c == ":"])
            if found:
                out[eid] = found[0][:2]
    return out


def delete(conn: sqlite3.Connection, keys: list[tuple[str, str]]) -> None:
    conn.executemany("DELETE FROM graph_cooccurs WHERE source_id = ? AND target_id = ?", keys)


def archive(conn: sqlite3.Connection, keys: list[tuple[str, str]]) -> None:
    """Weight 0 (logged when it changes)."""
    conn.executemany("INSERT INTO cooccurs_log (source_id, target_id, weight, namespace) SELECT source_id, target_id, "
                     "0, namespace FROM graph_cooccurs WHERE source_id = ? AND target_id = ? AND weight IS NOT 0", keys)
    conn.executemany("UPDATE graph_cooccurs SET weight = 0 WHERE source_id = ? AND target_id = ?", keys)


def pruned(conn: sqlite3.Connection) -> None:
    """After a prune: the last co-recalls of removed edges go (schema 2 deleted what no edge had)."""
    conn.execute("DELETE FROM graph_cooccur_gone")


def _existing(conn: sqlite3.Connection, keys: list[tuple[str, str]], chunk: int = 400) -> list[tuple]:
    """(source, target, evidence, namespace) of the stored edges among `keys`."""
    out: list[tuple] = []
    for i in range(0, len(keys), chunk):
        part = keys[i:i + chunk]
        out.extend(conn.execute(
            f"WITH k(s, t) AS (VALUES {','.join(['(?, ?)'] * len(part))}) SELECT c.source_id, c.target_id, "
            "c.evidence_count, c.namespace FROM k JOIN graph_cooccurs c ON c.source_id = k.s AND c.target_id = k.t",
            [v for key in part for v in key]).fetchall())
    return out


def select_in(conn: sqlite3.Connection, sql: str, values: list[str], chunk: int = 500) -> list[tuple]:
    """`sql` with its `IN ({})` bound to `values`, in chunks under SQLite's variable limit."""
    out: list[tuple] = []
    for i in range(0, len(values), chunk):
        part = values[i:i + chunk]
        out.extend(conn.execute(sql.format(",".join("?" * len(part))), part).fetchall())
    return out
