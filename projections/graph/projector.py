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
  computed when the pair is recalled together; the time of its last co-recall is kept for pruning
  (`projections.graph.cooccurs`: those edges have a lean table of their own);
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
from projections.graph import cooccurs
from projections.graph.cooccurs import CO_RECALL_TOP, COOCCURS_SCHEMA, co_recalled
from projections.graph.migrations import lean_recalls, scope_episodes, split_cooccurs
from projections.graph.schema import DB_FILE, GRAPH_SCHEMA
from projections.core.sqlite_projection import SqliteProjection

#: 2: episode nodes are scoped to the namespace (`episode:<namespace>:<id>`, was `episode:<id>`).
#: 3: CO_OCCURS edges in `graph_cooccurs` (with their last co-recall), `graph_edges` a view.
#: 4: `graph_recalls` WITHOUT ROWID (one B-tree, not a table and its key's index: each recall writes five).
SCHEMA_VERSION = 4
LABEL_CHARS = 120
REFERENCE_WEIGHT = 0.5
DEPENDS_WEIGHT = 1.0
DERIVED_WEIGHT = 1.0
# The projector's own tables; graphs built before the relation indexes replaced the single-column
# ones lose those (redundant: every write paid for them).
PROJECTION_SCHEMA = GRAPH_SCHEMA + """
DROP INDEX IF EXISTS idx_edges_source;
DROP INDEX IF EXISTS idx_edges_target;
CREATE TABLE IF NOT EXISTS graph_recalls (memory_id TEXT PRIMARY KEY, count INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS graph_conflicts (conflict_id TEXT PRIMARY KEY, edge_id TEXT NOT NULL,
    resolved_at TEXT);
""" + COOCCURS_SCHEMA


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

    def __init__(self, directory: Path, *, log_changes: bool = True) -> None:
        super().__init__(directory, DB_FILE)
        # False for an offline rebuild: co-recalls are not entered in `cooccurs_log` (600k entries for
        # a 200k-event log, ~8% of the fold, trimmed to the last COOCCURS_LOG_KEEP anyway)
        self.log_changes = log_changes

    def _load_checkpoint(self) -> str | None:
        """Also migrates a graph.db of an older schema, when the runner starts: readers must not wait for
        the next event to find the tables they read."""
        with self._lock:
            if self.path.exists():
                self._connect(create=True)
        return super()._load_checkpoint()

    def _migrate(self, conn: sqlite3.Connection, from_version: int) -> None:
        if from_version < 2:
            scope_episodes(conn)
        if from_version < 3:
            split_cooccurs(conn)
        if from_version < 4:
            lean_recalls(conn)

    def _fold_batch(self, conn: sqlite3.Connection, events: list[Event]) -> None:
        recalls: list[tuple[list[str], str]] = []   # recall.served not folded yet, folded together
        named: set[str] = set()                      # the ids they name
        odd = False                                  # one of them looks like an entity or episode node
        last_ms, at = -1, ""
        for ev in events:
            d = ev.data
            ms = ev.wall_ms
            if ms != last_ms:   # one ISO stamp per millisecond: a replay's events share them
                last_ms, at = ms, iso_from_ms(ms)
            if isinstance(d, RecallServed):
                top = list(dict.fromkeys(d.result_ids))[:CO_RECALL_TOP]
                recalls.append((top, at))
                named.update(top)
                odd = odd or any(m.startswith(("entity:", "episode:")) for m in top)
                continue
            if recalls and not _commutes(d, named, odd):
                co_recalled(conn, recalls, log=self.log_changes)
                recalls, named, odd = [], set(), False
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
                    conn.execute("DELETE FROM graph_links WHERE source_id = ? AND relation_type = 'REFERENCES'",
                                 (d.memory_id,))
                    self._memory(conn, d.memory_id, d.content, row[0], category, at, version=d.version)
            elif isinstance(d, (MemoryDeleted, MemoryForgotten)):
                conn.execute("DELETE FROM graph_links WHERE source_id = ? OR target_id = ?",
                             (d.memory_id, d.memory_id))
                cooccurs.remove_touching(conn, d.memory_id, keep_last_at=True)
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
            co_recalled(conn, recalls, log=self.log_changes)
        cooccurs.trim_log(conn)

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
            "INSERT INTO graph_links (id, source_id, target_id, relation_type, weight, namespace, evidence_count, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?) ON CONFLICT (id) DO UPDATE SET "
            "evidence_count = evidence_count + 1, weight = excluded.weight",
            (eid, source, target, relation, weight, namespace, at))
        return eid

    @staticmethod
    def _prune(conn: sqlite3.Connection, d: GraphPruned) -> None:
        co = cooccurs.keys_of(conn, {e for pair in d.merged_edges for e in pair} | {*d.archived_edges, *d.removed_edges})
        for kept_from, kept_into in d.merged_edges:
            if kept_from in co:
                row = conn.execute("SELECT evidence_count FROM graph_cooccurs WHERE source_id = ? AND target_id = ?",
                                   co[kept_from]).fetchone()
            else:
                row = conn.execute("SELECT evidence_count FROM graph_links WHERE id = ?", (kept_from,)).fetchone()
            if row is not None:
                if kept_into in co:
                    conn.execute("UPDATE graph_cooccurs SET evidence_count = evidence_count + ? WHERE source_id = ? "
                                 "AND target_id = ?", (row[0], *co[kept_into]))
                else:
                    conn.execute("UPDATE graph_links SET evidence_count = evidence_count + ? WHERE id = ?",
                                 (row[0], kept_into))
                cooccurs.delete(conn, [co[kept_from]] if kept_from in co else [])
                conn.execute("DELETE FROM graph_links WHERE id = ?", (kept_from,))
        cooccurs.archive(conn, [co[e] for e in d.archived_edges if e in co])
        conn.executemany("UPDATE graph_links SET weight = 0 WHERE id = ?", [(e,) for e in d.archived_edges])
        cooccurs.delete(conn, [co[e] for e in d.removed_edges if e in co])
        conn.executemany("DELETE FROM graph_links WHERE id = ?", [(e,) for e in d.removed_edges])
        for node in d.removed_nodes:
            conn.execute("DELETE FROM graph_links WHERE source_id = ? OR target_id = ?", (node, node))
            cooccurs.remove_touching(conn, node, keep_last_at=False)
            conn.execute("DELETE FROM graph_nodes WHERE id = ?", (node,))
        cooccurs.pruned(conn)

    # ------------------------------------------------------------------ reads, digest

    def read_scope(self, event: Event) -> str | None:
        """Generational: the graph does not change what a recall's text search returns."""
        return None

    async def digest(self) -> str:
        return await asyncio.to_thread(self._digest)

    def _digest(self) -> str:
        d = Digester()
        with self._snapshot(
                "SELECT id, type, label, namespace, properties, ROUND(pagerank, 9), created_at, last_updated_at "
                "FROM graph_nodes ORDER BY id",
                "SELECT id, source_id, target_id, relation_type, ROUND(weight, 9), namespace, evidence_count, "
                "created_at FROM graph_edges ORDER BY id",
                "SELECT memory_id, count FROM graph_recalls ORDER BY memory_id",
                "SELECT conflict_id, edge_id, resolved_at FROM graph_conflicts ORDER BY conflict_id",
                cooccurs.DIGEST_SQL) as tables:
            for tag, rows in zip(("node", "edge", "recalls", "conflict", "cooccur"), tables):
                for row in rows:
                    d.add_values(tag, row)
        return d.hexdigest()


def _commutes(d: object, named: set[str], odd: bool) -> bool:
    """Whether folding `d` before the recalls that came before it (naming `named`) folds the same: the
    co-recall fold reads the nodes a recall names, their recall counts and CO_OCCURS edges. A commit,
    correction or extraction adds nodes (a memory's own, entities, an episode: none named), a conflict
    touches other tables; a deletion or forgetting of a memory none of them names removes only that
    memory's node, count and edges (and keeps those edges' last co-recalls, which no edge between named
    memories is), so it commutes too; a prune (it ranks the whole graph) does not. Events the graph
    does not fold commute."""
    if isinstance(d, (MemoryCommitted, MemoryCorrected, EntitiesExtracted, MemoryDeleted, MemoryForgotten)):
        return not odd and d.memory_id not in named
    return not isinstance(d, GraphPruned)


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
