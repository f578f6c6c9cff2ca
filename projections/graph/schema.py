"""The knowledge-graph tables (seed 2.5.1) in `graph.db` (SQLite, WAL), and their vocabularies.

The graph projector creates these tables; the graph readers (`graph_navigate`, `graph_query`)
only read them. Memory nodes have ``id`` = the memory id and ``properties`` holding at least
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
CREATE TABLE IF NOT EXISTS graph_edges (
  id TEXT PRIMARY KEY,
  source_id TEXT NOT NULL,
  target_id TEXT NOT NULL,
  relation_type TEXT NOT NULL,   -- DEPENDS_ON | REFERENCES | CONFLICTS_WITH | CO_OCCURS | DERIVED_FROM
  weight REAL DEFAULT 0.5,
  namespace TEXT NOT NULL,
  evidence_count INTEGER DEFAULT 1,
  created_at TEXT
);
-- the seed's idx_edges_source(source_id) / idx_edges_target(target_id), widened: the same lookups
-- use them as prefixes, and recall's prefetch and expansion read one relation of a node strongest
-- first (hub memories carry thousands of CO_OCCURS edges); two fewer B-trees per edge write
CREATE INDEX IF NOT EXISTS idx_edges_source_rel ON graph_edges(source_id, relation_type, weight);
CREATE INDEX IF NOT EXISTS idx_edges_target_rel ON graph_edges(target_id, relation_type, weight);
CREATE INDEX IF NOT EXISTS idx_nodes_namespace ON graph_nodes(namespace);
CREATE INDEX IF NOT EXISTS idx_edges_namespace ON graph_edges(namespace);
"""
