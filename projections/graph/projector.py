"""The graph projector: memory events -> the knowledge graph in SQLite `<dir>/graph.db` (seed 2.5).

Built from the log alone (deterministic: the entity extractor is a pure function; LLM-extracted
entities will arrive as events):

- a memory is a node (id = memory id; type `decision` for decisions, else `fact`; label = the
  start of its content); every entity its content mentions (`projections.text.entities`) is an
  `entity` node of the memory's namespace, linked memory -REFERENCES-> entity, so memories that
  share an entity are two hops apart;
- `depends_on` -> memory -DEPENDS_ON-> memory; `derived_from` -> memory -DERIVED_FROM-> episode node
  `episode:<namespace>:<derived_from>` (the client's episode id, scoped to the memory's namespace);
  a pattern's `derived_from_memories` -> pattern -DERIVED_FROM-> each member memory;
- `recall.served`: every pair in a recall's top 5 gets CO_OCCURS with evidence = co-recalls and
  weight = co-recalls / min(recall counts of the two) (recall counts are counted here, in the top 5),
  computed when the pair is recalled together; the time of its last co-recall is kept for pruning;
- `conflict.detected` -> CONFLICTS_WITH (weight = confidence); `conflict.resolved` marks it;
- a correction re-extracts the memory's entities; deletion or forgetting removes its node and edges;
- `graph.pruned` (decided by the scheduler) deletes, archives and merges, then PageRank
  (networkx) is recomputed over the whole graph and stored on the nodes.

Namespace isolation (seed 2.5.6): an edge belongs to its source node's namespace; entity nodes are
per namespace (shared entities live in `shared`). Rows and checkpoint are written in one transaction
(`projections.core.sqlite_projection`).
"""

from __future__ import annotations

import asyncio
import sqlite3
from itertools import combinations
from pathlib import Path

import orjson

from events.catalogue import (
    ConflictDetected, ConflictResolved, EntitiesExtracted, GraphPruned, MemoryCommitted, MemoryCorrected, MemoryDeleted, MemoryForgotten,
    RecallServed,
)
from events.envelope import Event
from events.hlc import iso_from_ms
from events.vocabulary import SHARED_NAMESPACE
from projections.core.digest import Digester
from projections.text.entities import extract
from projections.graph.schema import DB_FILE, GRAPH_SCHEMA
from projections.core.sqlite_projection import SqliteProjection

#: 2: episode nodes are scoped to the namespace (`episode:<namespace>:<id>`, was `episode:<id>`).
SCHEMA_VERSION = 2
LABEL_CHARS = 120
REFERENCE_WEIGHT = 0.5
DEPENDS_WEIGHT = 1.0
DERIVED_WEIGHT = 1.0
CO_RECALL_TOP = 5
#: Every write of a CO_OCCURS edge, numbered (weight -1: deleted), written by triggers whatever the
#: statement: the gateway's in-memory prefetch partners (`projections.serving.prefetch`) follow it
#: instead of querying the edges on every recall. Not graph state: the digest leaves it out, and
#: only the last COOCCURS_LOG_KEEP entries are kept (a reader further behind reloads the edges).
COOCCURS_LOG_KEEP = 200_000
COOCCURS_LOG_SCHEMA = """
CREATE TABLE IF NOT EXISTS cooccurs_log (change INTEGER PRIMARY KEY, source_id TEXT NOT NULL,
    target_id TEXT NOT NULL, weight REAL NOT NULL, namespace TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS cooccurs_log_insert AFTER INSERT ON graph_edges
    WHEN NEW.relation_type = 'CO_OCCURS' BEGIN
    INSERT INTO cooccurs_log (source_id, target_id, weight, namespace)
        VALUES (NEW.source_id, NEW.target_id, NEW.weight, NEW.namespace); END;
CREATE TRIGGER IF NOT EXISTS cooccurs_log_update AFTER UPDATE OF weight, namespace ON graph_edges
    WHEN NEW.relation_type = 'CO_OCCURS' AND (NEW.weight IS NOT OLD.weight OR NEW.namespace IS NOT OLD.namespace) BEGIN
    INSERT INTO cooccurs_log (source_id, target_id, weight, namespace)
        VALUES (NEW.source_id, NEW.target_id, NEW.weight, NEW.namespace); END;
CREATE TRIGGER IF NOT EXISTS cooccurs_log_delete AFTER DELETE ON graph_edges
    WHEN OLD.relation_type = 'CO_OCCURS' BEGIN
    INSERT INTO cooccurs_log (source_id, target_id, weight, namespace)
        VALUES (OLD.source_id, OLD.target_id, -1, OLD.namespace); END;
"""
# The projector's own tables; graphs built before the relation indexes replaced the single-column
# ones lose those (redundant: every write paid for them).
PROJECTION_SCHEMA = GRAPH_SCHEMA + """
DROP INDEX IF EXISTS idx_edges_source;
DROP INDEX IF EXISTS idx_edges_target;
CREATE TABLE IF NOT EXISTS graph_recalls (memory_id TEXT PRIMARY KEY, count INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS graph_cooccur (edge_id TEXT PRIMARY KEY, last_at TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS graph_conflicts (conflict_id TEXT PRIMARY KEY, edge_id TEXT NOT NULL,
    resolved_at TEXT);
""" + COOCCURS_LOG_SCHEMA


def entity_node_id(namespace: str, kind: str, norm: str) -> str:
    return f"entity:{namespace}:{kind}:{norm}"


def episode_node_id(namespace: str, episode: str) -> str:
    """An episode id is the client's, scoped to the memory's namespace: the same id in two namespaces is
    two episodes (namespaces hold no ':', so the id reads back unambiguously)."""
    return f"episode:{namespace}:{episode}"


def edge_id(relation: str, source: str, target: str) -> str:
    return f"{relation}:{source}:{target}"


class GraphProjector(SqliteProjection):
    name = "graph"
    schema = PROJECTION_SCHEMA
    schema_version = SCHEMA_VERSION

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, DB_FILE)

    def _migrate(self, conn: sqlite3.Connection, from_version: int) -> None:
        if from_version < 2:
            _scope_episodes(conn)

    def _fold_batch(self, conn: sqlite3.Connection, events: list[Event]) -> None:
        recalls: list[tuple[list[str], str]] = []   # a run of consecutive recall.served, folded together
        for ev in events:
            d = ev.data
            at = iso_from_ms(ev.wall_ms)
            if isinstance(d, RecallServed):
                recalls.append((list(dict.fromkeys(d.result_ids))[:CO_RECALL_TOP], at))
                continue
            if recalls:
                _co_recalled(conn, recalls)
                recalls = []
            if isinstance(d, MemoryCommitted):
                self._memory(conn, d.memory_id, d.content, d.namespace, d.category, at, version=1)
                for dep in d.depends_on:
                    self._edge(conn, "DEPENDS_ON", d.memory_id, dep, d.namespace, DEPENDS_WEIGHT, at)
                if d.derived_from:
                    episode = episode_node_id(d.namespace, d.derived_from)
                    self._node(conn, episode, "episode", d.derived_from, d.namespace, {"episode_id": d.derived_from},
                               at)
                    self._edge(conn, "DERIVED_FROM", d.memory_id, episode, d.namespace, DERIVED_WEIGHT, at)
                for member in d.derived_from_memories:   # a pattern and the memories it was mined from
                    if self._exists(conn, member):
                        self._edge(conn, "DERIVED_FROM", d.memory_id, member, d.namespace, DERIVED_WEIGHT, at)
            elif isinstance(d, MemoryCorrected):
                row = conn.execute("SELECT namespace, properties FROM graph_nodes WHERE id = ?",
                                   (d.memory_id,)).fetchone()
                if row is not None:
                    category = orjson.loads(row[1] or "{}").get("category", "fact")
                    conn.execute("DELETE FROM graph_edges WHERE source_id = ? AND relation_type = 'REFERENCES'",
                                 (d.memory_id,))
                    self._memory(conn, d.memory_id, d.content, row[0], category, at, version=d.version)
            elif isinstance(d, (MemoryDeleted, MemoryForgotten)):
                conn.execute("DELETE FROM graph_edges WHERE source_id = ? OR target_id = ?",
                             (d.memory_id, d.memory_id))
                conn.execute("DELETE FROM graph_nodes WHERE id = ?", (d.memory_id,))
                conn.execute("DELETE FROM graph_recalls WHERE memory_id = ?", (d.memory_id,))
            elif isinstance(d, EntitiesExtracted):
                self._extracted(conn, d, at)
            elif isinstance(d, ConflictDetected):
                ids = list(dict.fromkeys(d.memory_ids))[:2]
                if len(ids) == 2 and self._exists(conn, ids[0]) and self._exists(conn, ids[1]):
                    eid = self._edge(conn, "CONFLICTS_WITH", ids[0], ids[1], None, float(d.confidence), at)
                    conn.execute("INSERT OR IGNORE INTO graph_conflicts (conflict_id, edge_id) VALUES (?, ?)",
                                 (d.conflict_id, eid))
            elif isinstance(d, ConflictResolved):
                conn.execute("UPDATE graph_conflicts SET resolved_at = ? WHERE conflict_id = ? AND resolved_at IS NULL",
                             (at, d.conflict_id))
            elif isinstance(d, GraphPruned):
                self._prune(conn, d)
                # at the prune itself, not at the end of the batch: what follows it in a batch must not
                # change the ranks, or live (small batches) and rebuilt (big batches) graphs differ
                _store_pagerank(conn)
        if recalls:
            _co_recalled(conn, recalls)
        conn.execute("DELETE FROM cooccurs_log WHERE change <= (SELECT MAX(change) FROM cooccurs_log) - ?",
                     (COOCCURS_LOG_KEEP,))

    # ------------------------------------------------------------------ writes

    @staticmethod
    def _exists(conn: sqlite3.Connection, node_id: str) -> bool:
        return conn.execute("SELECT 1 FROM graph_nodes WHERE id = ?", (node_id,)).fetchone() is not None

    @staticmethod
    def _node(conn: sqlite3.Connection, node_id: str, type_: str, label: str, namespace: str, props: dict,
              at: str) -> None:
        conn.execute(
            "INSERT INTO graph_nodes (id, type, label, namespace, properties, pagerank, created_at, last_updated_at) "
            "VALUES (?, ?, ?, ?, ?, 1.0, ?, ?) ON CONFLICT (id) DO UPDATE SET label = excluded.label, "
            "properties = excluded.properties, last_updated_at = excluded.last_updated_at",
            (node_id, type_, label, namespace, orjson.dumps(props, option=orjson.OPT_SORT_KEYS).decode(), at, at))

    def _memory(self, conn: sqlite3.Connection, mid: str, content: str, namespace: str, category: str, at: str, *,
                version: int) -> None:
        type_ = "decision" if category == "decision" else "fact"
        self._node(conn, mid, type_, content[:LABEL_CHARS], namespace,
                   {"memory_id": mid, "category": category, "version": version}, at)
        for ent in extract(content):
            self._reference(conn, mid, namespace, ent.kind, ent.value, ent.norm, at, "rules")

    def _reference(self, conn: sqlite3.Connection, mid: str, namespace: str, kind: str, value: str, norm: str,
                   at: str, extractor: str) -> None:
        nid = entity_node_id(namespace, kind, norm)
        conn.execute(
            "INSERT INTO graph_nodes (id, type, label, namespace, properties, pagerank, created_at, "
            "last_updated_at) VALUES (?, 'entity', ?, ?, ?, 1.0, ?, ?) ON CONFLICT (id) DO UPDATE SET "
            "last_updated_at = excluded.last_updated_at",
            (nid, value, namespace, orjson.dumps({"kind": kind, "norm": norm, "extractor": extractor},
                                                 option=orjson.OPT_SORT_KEYS).decode(), at, at))
        self._edge(conn, "REFERENCES", mid, nid, namespace, REFERENCE_WEIGHT, at)

    def _extracted(self, conn: sqlite3.Connection, d: EntitiesExtracted, at: str) -> None:
        """LLM-named entities of one version of a memory (ignored once a newer version exists)."""
        row = conn.execute("SELECT namespace, properties FROM graph_nodes WHERE id = ?", (d.memory_id,)).fetchone()
        if row is None or int(orjson.loads(row[1] or "{}").get("version", 1)) != d.version:
            return
        for kind, name in d.entities:
            norm = " ".join(name.casefold().split())
            if norm:
                self._reference(conn, d.memory_id, row[0], kind, name, norm, at, d.extractor or "llm")

    @staticmethod
    def _edge(conn: sqlite3.Connection, relation: str, source: str, target: str, namespace: str | None,
              weight: float, at: str) -> str:
        """Insert (or count one more piece of evidence for) an edge; its namespace is its source's."""
        if namespace is None:
            row = conn.execute("SELECT namespace FROM graph_nodes WHERE id = ?", (source,)).fetchone()
            namespace = row[0] if row else SHARED_NAMESPACE
        eid = edge_id(relation, source, target)
        conn.execute(
            "INSERT INTO graph_edges (id, source_id, target_id, relation_type, weight, namespace, evidence_count, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?) ON CONFLICT (id) DO UPDATE SET "
            "evidence_count = evidence_count + 1, weight = excluded.weight",
            (eid, source, target, relation, weight, namespace, at))
        return eid

    @staticmethod
    def _prune(conn: sqlite3.Connection, d: GraphPruned) -> None:
        for kept_from, kept_into in d.merged_edges:
            row = conn.execute("SELECT evidence_count FROM graph_edges WHERE id = ?", (kept_from,)).fetchone()
            if row is not None:
                conn.execute("UPDATE graph_edges SET evidence_count = evidence_count + ? WHERE id = ?",
                             (row[0], kept_into))
                conn.execute("DELETE FROM graph_edges WHERE id = ?", (kept_from,))
        conn.executemany("UPDATE graph_edges SET weight = 0 WHERE id = ?", [(e,) for e in d.archived_edges])
        conn.executemany("DELETE FROM graph_edges WHERE id = ?", [(e,) for e in d.removed_edges])
        for node in d.removed_nodes:
            conn.execute("DELETE FROM graph_edges WHERE source_id = ? OR target_id = ?", (node, node))
            conn.execute("DELETE FROM graph_nodes WHERE id = ?", (node,))
        conn.execute("DELETE FROM graph_cooccur WHERE edge_id NOT IN (SELECT id FROM graph_edges)")

    # ------------------------------------------------------------------ reads, digest

    def read_scope(self, event: Event) -> str | None:
        """Generational: the graph does not change what a recall's text search returns."""
        return None

    async def digest(self) -> str:
        return await asyncio.to_thread(self._digest)

    def _digest(self) -> str:
        d = Digester()
        nodes, edges, recalls, conflicts, cooccur = self._snapshot(
            "SELECT id, type, label, namespace, properties, ROUND(pagerank, 9), created_at, last_updated_at "
            "FROM graph_nodes ORDER BY id",
            "SELECT id, source_id, target_id, relation_type, ROUND(weight, 9), namespace, evidence_count, created_at "
            "FROM graph_edges ORDER BY id",
            "SELECT memory_id, count FROM graph_recalls ORDER BY memory_id",
            "SELECT conflict_id, edge_id, resolved_at FROM graph_conflicts ORDER BY conflict_id",
            "SELECT edge_id, last_at FROM graph_cooccur ORDER BY edge_id")
        for row in nodes:
            d.add({"t": "node", "v": list(row)})
        for row in edges:
            d.add({"t": "edge", "v": list(row)})
        for row in recalls:
            d.add({"t": "recalls", "v": list(row)})
        for row in conflicts:
            d.add({"t": "conflict", "v": list(row)})
        for row in cooccur:
            d.add({"t": "cooccur", "v": list(row)})
        return d.hexdigest()


def _scope_episodes(conn: sqlite3.Connection) -> None:
    """Schema 1 -> 2: each unscoped episode node `episode:<id>` becomes one node per namespace whose
    memories derive from it, `episode:<namespace>:<id>` (created at its first remaining DERIVED_FROM
    edge, updated at its last), and those edges point to it. Its stored PageRank is kept until the next
    prune recomputes it; `zhiyi replay --verify` tells whether a rebuild would differ."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'graph_nodes'").fetchone() is None:
        return
    conn.execute("BEGIN IMMEDIATE")   # with the version: a crash leaves schema 1 whole, migrated again
    try:
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
        conn.execute("PRAGMA user_version = 2")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _store_pagerank(conn: sqlite3.Connection) -> None:
    """PageRank over the whole graph (edges undirected for importance, weighted), stored per node."""
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(r[0] for r in conn.execute("SELECT id FROM graph_nodes ORDER BY id"))
    for src, dst, w in conn.execute("SELECT source_id, target_id, weight FROM graph_edges ORDER BY id"):
        if src in g and dst in g and w > 0:
            g.add_edge(src, dst, weight=float(w))
    if not g:
        return
    ranks = nx.pagerank(g, weight="weight", tol=1e-10, max_iter=200) if g.number_of_edges() else {}
    n = g.number_of_nodes()
    # scaled so the average node has 1.0 (the schema's default), rounded so replays compare equal
    conn.executemany("UPDATE graph_nodes SET pagerank = ? WHERE id = ?",
                     [(round(ranks.get(node, 1.0 / n) * n, 9), node) for node in g.nodes])


def _co_recalled(conn: sqlite3.Connection, recalls: list[tuple[list[str], str]]) -> None:
    """Fold a run of `recall.served` (each: its top memory ids, its time), in order, as if one by one.

    Every recall of a known memory counts one; every pair of a recall's known top memories gets one
    more piece of evidence and weight = evidence / min(the two recall counts at that moment). The
    run is simulated in memory and each touched row written once: a batch folds to exactly what the
    same events give one at a time (live tailing and replays agree), with a few statements per
    batch instead of ~25 per recall.
    """
    ids = list(dict.fromkeys(m for top, _ in recalls for m in top))
    known = dict(_select_in(conn, "SELECT id, namespace FROM graph_nodes WHERE id IN ({})", ids))
    counts = dict(_select_in(conn, "SELECT memory_id, count FROM graph_recalls WHERE memory_id IN ({})",
                             [m for m in ids if m in known]))
    tops, pair_ids = [], {}
    for top, at in recalls:
        top = [m for m in top if m in known]
        tops.append((top, at))
        for a, b in combinations(sorted(top), 2):
            # the edge lives with a private endpoint when there is one (seed 2.5.6: source's namespace)
            src, dst = (b, a) if known[a] == SHARED_NAMESPACE and known[b] != SHARED_NAMESPACE else (a, b)
            pair_ids[(a, b)] = (edge_id("CO_OCCURS", src, dst), src, dst)
    evidence = dict(_select_in(conn, "SELECT id, evidence_count FROM graph_edges WHERE id IN ({})",
                               [eid for eid, _, _ in pair_ids.values()]))
    edges: dict[str, list] = {}     # edge id -> [source, target, weight, namespace, evidence, created_at, last_at]
    for top, at in tops:
        for m in top:
            counts[m] = counts.get(m, 0) + 1
        for a, b in combinations(sorted(top), 2):
            eid, src, dst = pair_ids[(a, b)]
            seen = edges.get(eid)
            if seen is None:
                had = evidence.get(eid)
                # an existing edge keeps its namespace and creation time (the upsert below leaves them)
                seen = edges[eid] = [src, dst, 0.0, known[src], had or 0, at, at]
            seen[4] += 1
            seen[2] = min(1.0, seen[4] * 1.0 / min(counts[a], counts[b]))
            seen[6] = at
    conn.executemany("INSERT INTO graph_recalls (memory_id, count) VALUES (?, ?) "
                     "ON CONFLICT (memory_id) DO UPDATE SET count = excluded.count",
                     [(m, counts[m]) for m in ids if m in known])
    conn.executemany(
        "INSERT INTO graph_edges (id, source_id, target_id, relation_type, weight, namespace, evidence_count, "
        "created_at) VALUES (?, ?, ?, 'CO_OCCURS', ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
        "evidence_count = excluded.evidence_count, weight = excluded.weight",
        [(eid, e[0], e[1], e[2], e[3], e[4], e[5]) for eid, e in edges.items()])
    conn.executemany("INSERT INTO graph_cooccur (edge_id, last_at) VALUES (?, ?) "
                     "ON CONFLICT (edge_id) DO UPDATE SET last_at = excluded.last_at",
                     [(eid, e[6]) for eid, e in edges.items()])


def _select_in(conn: sqlite3.Connection, sql: str, values: list[str], chunk: int = 500) -> list[tuple]:
    """`sql` with its `IN ({})` bound to `values`, in chunks under SQLite's variable limit."""
    out: list[tuple] = []
    for i in range(0, len(values), chunk):
        part = values[i:i + chunk]
        out.extend(conn.execute(sql.format(",".join("?" * len(part))), part).fetchall())
    return out
