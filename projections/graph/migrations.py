"""Migrations of a graph.db written by an older schema (`projections.graph.projector.SCHEMA_VERSION`),
each in one transaction with the new `user_version`: a crash leaves the old schema whole, migrated
again at the next start."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from projections.graph.cooccurs import COOCCURS_SCHEMA
from projections.graph.schema import GRAPH_SCHEMA


@contextmanager
def _migrating(conn: sqlite3.Connection, version: int) -> Iterator[None]:
    """The block's statements and the new `user_version` in one transaction: a crash leaves the old
    schema whole, migrated again at the next start."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute(f"PRAGMA user_version = {int(version)}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def scope_episodes(conn: sqlite3.Connection) -> None:
    """Schema 1 -> 2: each unscoped episode node `episode:<id>` becomes one node per namespace whose
    memories derive from it, `episode:<namespace>:<id>` (created at its first remaining DERIVED_FROM
    edge, updated at its last), and those edges point to it. Its stored PageRank is kept until the next
    prune recomputes it; `zhiyi replay --verify` tells whether a rebuild would differ."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'graph_nodes'").fetchone() is None:
        return
    with _migrating(conn, 2):
        conn.execute("CREATE TEMP TABLE old_episodes AS SELECT id, label, properties, pagerank FROM graph_nodes "
                     "WHERE type = 'episode'")
        conn.execute("DELETE FROM graph_nodes WHERE id IN (SELECT id FROM old_episodes)")
        conn.execute(
            "INSERT INTO graph_nodes (id, type, label, namespace, properties, pagerank, created_at, last_updated_at) "
            "SELECT 'episode:' || e.namespace || ':' || o.label, 'episode', o.label, e.namespace, o.properties, "
            "o.pagerank, MIN(e.created_at), MAX(e.created_at) FROM graph_edges e JOIN old_episodes o ON o.id = e.target_id "
            "WHERE e.relation_type = 'DERIVED_FROM' GROUP BY e.namespace, o.id ON CONFLICT (id) DO NOTHING")
        conn.execute(
            "UPDATE graph_edges SET target_id = 'episode:' || namespace || ':' || "
            "(SELECT label FROM old_episodes o WHERE o.id = graph_edges.target_id), "
            "id = 'DERIVED_FROM:' || source_id || ':episode:' || namespace || ':' || "
            "(SELECT label FROM old_episodes o WHERE o.id = graph_edges.target_id) "
            "WHERE relation_type = 'DERIVED_FROM' AND target_id IN (SELECT id FROM old_episodes)")
        conn.execute("DROP TABLE old_episodes")


def split_cooccurs(conn: sqlite3.Connection) -> None:
    """Schema 2 -> 3: the table `graph_edges` becomes `graph_links` less its CO_OCCURS rows, which move to
    `graph_cooccurs` with their last co-recall from `graph_cooccur` (whose rows without an edge go to
    `graph_cooccur_gone`); `graph_edges` is now the view over both. The triggers that logged CO_OCCURS
    writes go (the projector logs them); `cooccurs_log` and its numbering stay, so the gateway's prefetch
    partners carry on from the change they saw."""
    def exists(kind: str, name: str) -> bool:
        return conn.execute("SELECT 1 FROM sqlite_master WHERE type = ? AND name = ?", (kind, name)).fetchone() is not None

    if not exists("table", "graph_edges"):
        return
    with _migrating(conn, 3):
        for trigger in ("cooccurs_log_insert", "cooccurs_log_update", "cooccurs_log_delete"):
            conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        conn.execute("ALTER TABLE graph_edges RENAME TO graph_links")
        for statement in _statements(GRAPH_SCHEMA + COOCCURS_SCHEMA):
            conn.execute(statement)
        if exists("table", "graph_cooccur"):
            conn.execute("INSERT INTO graph_cooccurs (source_id, target_id, weight, namespace, evidence_count, created_at, "
                         "last_at) SELECT e.source_id, e.target_id, e.weight, e.namespace, e.evidence_count, e.created_at, "
                         "c.last_at FROM graph_links e LEFT JOIN graph_cooccur c ON c.edge_id = e.id "
                         "WHERE e.relation_type = 'CO_OCCURS' ORDER BY e.source_id, e.target_id")
            conn.execute("INSERT INTO graph_cooccur_gone (edge_id, last_at) SELECT edge_id, last_at FROM graph_cooccur "
                         "WHERE edge_id NOT IN (SELECT id FROM graph_links)")
            conn.execute("DROP TABLE graph_cooccur")
        else:
            conn.execute("INSERT INTO graph_cooccurs (source_id, target_id, weight, namespace, evidence_count, created_at) "
                         "SELECT source_id, target_id, weight, namespace, evidence_count, created_at FROM graph_links "
                         "WHERE relation_type = 'CO_OCCURS' ORDER BY source_id, target_id")
        conn.execute("DELETE FROM graph_links WHERE relation_type = 'CO_OCCURS'")


def lean_recalls(conn: sqlite3.Connection) -> None:
    """Schema 3 -> 4: `graph_recalls` (each memory's recall count) becomes a WITHOUT ROWID table, its rows kept."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'graph_recalls'").fetchone() is None:
        return
    with _migrating(conn, 4):
        conn.execute("CREATE TABLE graph_recalls_v4 (memory_id TEXT PRIMARY KEY, count INTEGER NOT NULL) WITHOUT ROWID")
        conn.execute("INSERT INTO graph_recalls_v4 SELECT memory_id, count FROM graph_recalls")
        conn.execute("DROP TABLE graph_recalls")
        conn.execute("ALTER TABLE graph_recalls_v4 RENAME TO graph_recalls")


def _statements(script: str) -> list[str]:
    """The statements of a schema script, one by one (`executescript` would commit the transaction)."""
    out, part = [], ""
    for line in script.splitlines(keepends=True):
        part += line
        if sqlite3.complete_statement(part):
            out.append(part.strip())
            part = ""
    return out
