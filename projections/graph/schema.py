"""The knowledge-graph tables (seed 2.5.1) in `graph.db` (SQLite, WAL), and their vocabularies.

The graph projector creates these tables; the graph readers (`graph_navigate`, `graph_query`)
only read them. Edges live in two tables, CO_OCCURS (written by every recall) in a lean one of their
own, and read together through the view `graph_edges` (the seed's table, column for column). Memory nodes have ``id`` = the memory id and ``properties`` holding at least
``memory_id`` and ``category``; entity nodes have ids like ``entity:<namespace>:<kind>:<norm>``.
Every node and edge carries a ``namespace``: readers must see only the namespaces they are given.
"""

from __future__ import annotations

__all__ = ["DB_FILE", "GRAPH_SCHEMA", "NODE_TYPES", "RELATION_TYPES"]

DB_FILE = "graph.db"

NODE_TYPES: tuple[str, ...] = ("entity", "fact", "decision", "skill", "episode")
RELATION_TYPES: tuple[str, ...] = ("DEPENDS_ON", "REFERENCES", "CONFLICTS_WITH", "CO_OCCURS", "DERIVED_FROM")

GRAPH_SCHEMA = """
CREATE TABLE IF NOT EXISTS graph_nodes (
  id TEXT PRIMARY KEY,
  type TEXT NOT NULL,            -- entity | fact | decision | skill | episode
  label TEXT NOT NULL,
  namespace TEXT NOT NULL,
  properties TEXT,               -- JSON object
  pagerank REAL DEFAULT 1.0,
  created_at TEXT,
  last_updated_at TEXT
);
-- every edge but CO_OCCURS (the seed's graph_edges table)
CREATE TABLE IF NOT EXISTS graph_links (
  id TEXT PRIMARY KEY,           -- <relation>:<source_id>:<target_id>
  source_id TEXT NOT NULL,
  target_id TEXT NOT NULL,
  relation_type TEXT NOT NULL,   -- DEPENDS_ON | REFERENCES | CONFLICTS_WITH | DERIVED_FROM
  weight REAL DEFAULT 0.5,
  namespace TEXT NOT NULL,
  evidence_count INTEGER DEFAULT 1,
  created_at TEXT
);
-- the seed's idx_edges_source(source_id) / idx_edges_target(target_id), widened: the same lookups
-- use them as prefixes, and expansion reads one relation of a node strongest first
CREATE INDEX IF NOT EXISTS idx_edges_source_rel ON graph_links(source_id, relation_type, weight);
CREATE INDEX IF NOT EXISTS idx_edges_target_rel ON graph_links(target_id, relation_type, weight);
CREATE INDEX IF NOT EXISTS idx_nodes_namespace ON graph_nodes(namespace);
CREATE INDEX IF NOT EXISTS idx_edges_namespace ON graph_links(namespace);
-- CO_OCCURS edges (id CO_OCCURS:<source_id>:<target_id>), one lean row each: every recall writes ten
-- of them. ``last_at``: the time of the edge's last co-recall (NULL: not known, for pruning)
CREATE TABLE IF NOT EXISTS graph_cooccurs (
  source_id TEXT NOT NULL,
  target_id TEXT NOT NULL,
  weight REAL DEFAULT 0.5,
  namespace TEXT NOT NULL,
  evidence_count INTEGER DEFAULT 1,
  created_at TEXT,
  last_at TEXT,
  PRIMARY KEY (source_id, target_id)
) WITHOUT ROWID;
-- a node's strongest edges either way, heaviest first, ties by the far node's id (the key's rest):
-- reads of a hub take an index range, not all its edges sorted (20k edges by the key alone: 30 ms)
DROP INDEX IF EXISTS idx_cooccurs_target;
CREATE INDEX IF NOT EXISTS idx_cooccurs_by_target ON graph_cooccurs(target_id, weight DESC);
CREATE INDEX IF NOT EXISTS idx_cooccurs_by_source ON graph_cooccurs(source_id, weight DESC);
-- every edge, as the seed's table: what reads across relations use (a relation's own reads go to
-- its table); the CASTs give both arms the same affinities, so SQLite flattens the view into the
-- query and reaches each table through its indexes
CREATE VIEW IF NOT EXISTS graph_edges (id, source_id, target_id, relation_type, weight, namespace, evidence_count,
    created_at) AS
  SELECT id, source_id, target_id, relation_type, weight, namespace, evidence_count, created_at FROM graph_links
  UNION ALL
  SELECT CAST('CO_OCCURS:' || source_id || ':' || target_id AS TEXT), source_id, target_id,
    CAST('CO_OCCURS' AS TEXT), weight, namespace, evidence_count, created_at FROM graph_cooccurs;
"""
