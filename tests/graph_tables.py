"""Test graphs written straight into graph.db's edge tables (`projections.graph.schema`): `graph_edges`
is a view over `graph_links` and `graph_cooccurs` (CO_OCCURS, whose id is `CO_OCCURS:<source>:<target>`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence


def insert_edges(conn: sqlite3.Connection, columns: Sequence[str], rows: Iterable[Sequence]) -> None:
    """INSERT `rows` (values for `columns`, which name `relation_type` unless every row is CO_OCCURS:
    then it may be left out) into the table of each row's relation; a CO_OCCURS row's `id` is dropped."""
    rows = [tuple(r) for r in rows]
    rel = columns.index("relation_type") if "relation_type" in columns else None
    links = [r for r in rows if rel is not None and r[rel] != "CO_OCCURS"]
    co = [r for r in rows if rel is None or r[rel] == "CO_OCCURS"]
    if links:
        conn.executemany(f"INSERT INTO graph_links ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                         links)
    keep = [i for i, c in enumerate(columns) if c not in ("id", "relation_type")]
    if co:
        conn.executemany(f"INSERT INTO graph_cooccurs ({', '.join(columns[i] for i in keep)}) "
                         f"VALUES ({', '.join('?' * len(keep))})", [tuple(r[i] for i in keep) for r in co])


#: what schema 2 had that schema 3 does not (`projections.graph.migrations.split_cooccurs`), verbatim
SCHEMA_2_COOCCURS = """
CREATE TABLE graph_cooccur (edge_id TEXT PRIMARY KEY, last_at TEXT NOT NULL) WITHOUT ROWID;
CREATE TRIGGER cooccurs_log_insert AFTER INSERT ON graph_edges
    WHEN NEW.relation_type = 'CO_OCCURS' BEGIN
    INSERT INTO cooccurs_log (source_id, target_id, weight, namespace)
        VALUES (NEW.source_id, NEW.target_id, NEW.weight, NEW.namespace); END;
CREATE TRIGGER cooccurs_log_update AFTER UPDATE OF weight, namespace ON graph_edges
    WHEN NEW.relation_type = 'CO_OCCURS' AND (NEW.weight IS NOT OLD.weight OR NEW.namespace IS NOT OLD.namespace) BEGIN
    INSERT INTO cooccurs_log (source_id, target_id, weight, namespace)
        VALUES (NEW.source_id, NEW.target_id, NEW.weight, NEW.namespace); END;
CREATE TRIGGER cooccurs_log_delete AFTER DELETE ON graph_edges
    WHEN OLD.relation_type = 'CO_OCCURS' BEGIN
    INSERT INTO cooccurs_log (source_id, target_id, weight, namespace)
        VALUES (OLD.source_id, OLD.target_id, -1, OLD.namespace); END;
"""


def as_schema_2(path) -> None:
    """Rewrite the graph.db at `path` as schema 2 stored the same graph: CO_OCCURS rows in the table
    `graph_edges` (with every other edge), their last co-recalls in `graph_cooccur`, the log's triggers."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript("""
        BEGIN;
        DROP VIEW graph_edges;
        DROP TRIGGER cooccurs_deleted;
        ALTER TABLE graph_links RENAME TO graph_edges;
        INSERT INTO graph_edges (id, source_id, target_id, relation_type, weight, namespace, evidence_count, created_at)
            SELECT 'CO_OCCURS:' || source_id || ':' || target_id, source_id, target_id, 'CO_OCCURS', weight, namespace,
            evidence_count, created_at FROM graph_cooccurs;
    """ + SCHEMA_2_COOCCURS + """
        INSERT INTO graph_cooccur SELECT 'CO_OCCURS:' || source_id || ':' || target_id, last_at FROM graph_cooccurs
            WHERE last_at IS NOT NULL UNION ALL SELECT edge_id, last_at FROM graph_cooccur_gone;
        DROP TABLE graph_cooccurs;
        DROP TABLE graph_cooccur_gone;
        PRAGMA user_version = 2;
        COMMIT;
    """)
    conn.close()
