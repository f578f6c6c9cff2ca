"""Read side of the knowledge graph (`projections.graph.projector`): stats, navigation, the pattern
language, the prune plan, and the lookups recall and the correction cascade use. Every read is
limited to the namespaces the caller may read (seed 2.5.6; None: every namespace, for the admin
acting for nobody); a missing database reads as an empty graph. Synchronous (SQLite): call from a
thread."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from projections.core.sqlite_reader import SqliteReader
from projections.graph.navigate import GraphNotFound, Path as GraphPath, navigate as find_paths
from projections.graph.prune import PrunePlan, plan_prune
from projections.graph.query import run as run_query
from projections.graph.query_parse import Query
from projections.graph.schema import DB_FILE, NODE_TYPES, RELATION_TYPES

__all__ = ["GraphNotFound", "GraphPath", "GraphReader", "Neighbour", "PrunePlan"]

PREFETCH_MIN_WEIGHT = 0.6          # seed 2.6 step 6 / appendix B prefetch.cooccur_threshold
ENTITY_FANOUT = 50                 # memories reached through one entity, at most


@dataclass(frozen=True, slots=True)
class Neighbour:
    memory_id: str
    via: str            # the hit it was reached from
    relation: str       # DEPENDS_ON | CO_OCCURS | REFERENCES (a shared entity)
    weight: float
    entity: str = ""    # the shared entity's label, for REFERENCES


def _marks(n: int) -> str:
    return ",".join("?" * n)


class GraphReader(SqliteReader):
    reads: ClassVar[tuple[str, ...]] = ("graph",)   # the projection to wait for (read-your-writes)

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, DB_FILE)

    # ------------------------------------------------------------------ stats

    def stats(self, namespaces: list[str] | None) -> dict[str, Any]:
        def run(conn: sqlite3.Connection) -> dict[str, Any]:
            where, args = ("WHERE namespace IN (" + _marks(len(namespaces)) + ")", namespaces) if namespaces \
                else ("", [])
            nodes = dict(conn.execute(f"SELECT type, COUNT(*) FROM graph_nodes {where} GROUP BY type", args).fetchall())
            edges = dict(conn.execute(f"SELECT relation_type, COUNT(*) FROM graph_edges {where} "
                                      "GROUP BY relation_type", args).fetchall())
            by_ns: dict[str, dict[str, int]] = {}
            for ns, n in conn.execute(f"SELECT namespace, COUNT(*) FROM graph_nodes {where} GROUP BY namespace", args):
                by_ns.setdefault(ns, {"nodes": 0, "edges": 0})["nodes"] = n
            for ns, n in conn.execute(f"SELECT namespace, COUNT(*) FROM graph_edges {where} GROUP BY namespace", args):
                by_ns.setdefault(ns, {"nodes": 0, "edges": 0})["edges"] = n
            return _stats(nodes, edges, by_ns)

        return self.read(run, _stats({}, {}, {}))

    def namespaces(self) -> list[str]:
        return self.read(lambda conn: [r[0] for r in conn.execute(
            "SELECT DISTINCT namespace FROM graph_nodes ORDER BY namespace")], [])

    def with_connection(self, fn, empty):
        """Run `fn(conn)` under the reader's lock; `empty` when there is no graph yet."""
        return self.read(fn, empty)

    # ------------------------------------------------------------------ navigation, pattern language

    def navigate(self, source: str, target: str, namespaces: list[str] | None, max_hops: int) -> list[GraphPath]:
        """The best paths from `source` to `target` (`projections.graph.navigate`); GraphNotFound
        for an end that is unknown or outside `namespaces` (with no graph yet: `source`)."""
        def run(conn: sqlite3.Connection) -> list[GraphPath]:
            return find_paths(conn, source, target, _readable(conn, namespaces), max_hops)

        paths = self.read(run, None)
        if paths is None:
            raise GraphNotFound(source)
        return paths

    def query(self, query: Query, namespaces: list[str] | None) -> dict[str, Any]:
        """A parsed pattern query (`projections.graph.query`) over `namespaces`: columns and rows."""
        return self.read(lambda conn: run_query(conn, query, _readable(conn, namespaces)),
                          {"columns": [], "rows": []})

    # ------------------------------------------------------------------ maintenance

    def prune_plan(self, now_ms: int) -> PrunePlan:
        """What a graph prune at `now_ms` removes, archives and merges (`projections.graph.prune`)."""
        return self.read(lambda conn: plan_prune(conn, now_ms), PrunePlan())

    def degrees(self, node_ids: list[str]) -> dict[str, int]:
        """How many edges touch each of `node_ids` (either end, any relation; absent: 0)."""
        if not node_ids:
            return {}

        def run(conn: sqlite3.Connection) -> dict[str, int]:
            out: dict[str, int] = {}
            for i in range(0, len(node_ids), 500):
                chunk = node_ids[i:i + 500]
                for column in ("source_id", "target_id"):
                    for node, n in conn.execute(f"SELECT {column}, COUNT(*) FROM graph_edges WHERE {column} IN "
                                                f"({_marks(len(chunk))}) GROUP BY {column}", chunk):
                        out[node] = out.get(node, 0) + n
            return out

        return self.read(run, {})

    # ------------------------------------------------------------------ recall, cascade

    def dependants(self, memory_id: str) -> list[str]:
        """Memories that DEPENDS_ON `memory_id` (any namespace: a cascade crosses them)."""
        return self.read(lambda conn: [r[0] for r in conn.execute(
            "SELECT source_id FROM graph_links WHERE target_id = ? AND relation_type = 'DEPENDS_ON' "
            "ORDER BY source_id", (memory_id,))], [])

    def neighbours(self, memory_ids: list[str], namespaces: list[str], limit: int = 20) -> list[Neighbour]:
        """Memories one hop from `memory_ids` (a DEPENDS_ON / CO_OCCURS edge either way, or a shared
        entity), readable in `namespaces`, strongest first; the hits themselves excluded."""
        if not memory_ids or not namespaces:
            return []

        def run(conn: sqlite3.Connection) -> list[Neighbour]:
            hits, ns = set(memory_ids), list(namespaces)
            found: dict[str, Neighbour] = {}

            def keep(n: Neighbour) -> None:
                if n.memory_id not in hits and (n.memory_id not in found or found[n.memory_id].weight < n.weight):
                    found[n.memory_id] = n

            ids = list(memory_ids)
            for src, dst, w, rel, mid in _strongest(conn, ids, ("DEPENDS_ON", "CO_OCCURS"), ns, limit + len(hits),
                                                    0.0, relation=True, memories_only=True):
                keep(Neighbour(dst if src == mid else src, mid, rel, float(w)))
            for via, entity, label, other, w in conn.execute(
                    f"SELECT a.source_id, a.target_id, en.label, b.source_id, a.weight * b.weight "
                    f"FROM graph_links a JOIN graph_nodes en ON en.id = a.target_id "
                    f"JOIN graph_links b ON b.target_id = a.target_id AND b.relation_type = 'REFERENCES' "
                    f"JOIN graph_nodes m ON m.id = b.source_id "
                    f"WHERE a.source_id IN ({_marks(len(ids))}) AND a.relation_type = 'REFERENCES' "
                    f"AND +en.namespace IN ({_marks(len(ns))}) AND +m.namespace IN ({_marks(len(ns))}) "
                    f"AND b.source_id != a.source_id LIMIT ?", [*ids, *ns, *ns, ENTITY_FANOUT * len(ids)]):
                keep(Neighbour(other, via, "REFERENCES", float(w), label))
            return sorted(found.values(), key=lambda n: (-n.weight, n.memory_id))[:limit]

        return self.read(run, [])

    def prefetch(self, memory_ids: list[str], namespaces: list[str], min_weight: float = PREFETCH_MIN_WEIGHT,
                 limit: int = 10) -> list[Neighbour]:
        """CO_OCCURS partners (weight > `min_weight`) of `memory_ids` over edges the caller may read.

        Asked on the event loop until the gateway's partners in memory are loaded
        (`projections.serving.prefetch`), so it reads `graph_cooccurs` alone: the heaviest edges of
        each id and direction, without the node join `_strongest` makes (through the table's
        (target, weight) and (source, weight) indexes; equal weights by the far id). An edge lives in
        its private endpoint's namespace (seed 2.5.6), so its far end is in that namespace or in
        `shared`; a caller whose scope leaves `shared` out checks the far end's namespace itself
        (`RecallService.prefetch` does, on the rows)."""
        if not memory_ids or not namespaces:
            return []
        ids, ns, hits = list(dict.fromkeys(memory_ids)), list(namespaces), set(memory_ids)
        per_node = limit + len(hits)

        def run(conn: sqlite3.Connection) -> list[Neighbour]:
            args = [a for _ in range(2) for mid in ids for a in (mid, mid, min_weight, *ns, per_node)]
            out: dict[str, Neighbour] = {}
            rank = {mid: i for i, mid in enumerate(ids)}   # equal weights: via the earlier hit
            for src, dst, w, mid in conn.execute(_partners_sql(len(ids), len(ns)), args):
                other = dst if src == mid else src
                if other in hits:
                    continue
                had = out.get(other)
                if had is None or (had.weight, -rank[had.via]) < (w, -rank[mid]):
                    out[other] = Neighbour(other, mid, "CO_OCCURS", float(w))
            return sorted(out.values(), key=lambda n: (-n.weight, n.memory_id))[:limit]

        return self.read(run, [])


def _readable(conn: sqlite3.Connection, namespaces: list[str] | None) -> list[str]:
    if namespaces is not None:
        return namespaces
    return [r[0] for r in conn.execute("SELECT DISTINCT namespace FROM graph_nodes ORDER BY namespace")]


@lru_cache(maxsize=64)
def _partners_sql(n_ids: int, n_namespaces: int) -> str:
    """`GraphReader.prefetch`'s statement for n ids: per direction and id, the heaviest readable
    CO_OCCURS edges above a weight (parameters: id, id, weight, namespaces..., limit)."""
    marks = _marks(n_namespaces)
    return " UNION ALL ".join(
        f"SELECT * FROM (SELECT source_id, target_id, weight, ? FROM graph_cooccurs WHERE {here} = ? "
        f"AND weight > ? AND +namespace IN ({marks}) ORDER BY weight DESC, {there} LIMIT ?)"
        for here, there in (("source_id", "target_id"), ("target_id", "source_id")) for _ in range(n_ids))


def _strongest(conn: sqlite3.Connection, node: str | list[str], relations: tuple[str, ...], namespaces: list[str],
               limit: int, above: float, *, relation: bool = False, memories_only: bool = False) -> list[tuple]:
    """The `limit` heaviest edges of each node (either direction) of `relations` with weight >
    `above`, whose edge and far node are in `namespaces`: one index range scan per (node,
    direction, relation), heaviest first, so a hub memory with thousands of edges costs no more than
    a quiet one; all of them in ONE statement (UNION ALL). `+` keeps SQLite's planner
    off the namespace indexes (it would scan every edge of a namespace)."""
    nodes = [node] if isinstance(node, str) else list(dict.fromkeys(node))
    marks = _marks(len(namespaces))
    kind = " AND n.type != 'entity'" if memories_only else ""
    parts, args = [], []
    for here, there in (("source_id", "target_id"), ("target_id", "source_id")):
        for rel in relations:
            for n in nodes:
                # CO_OCCURS edges have a table of their own (`projections.graph.cooccurs`)
                table, only = ("graph_cooccurs", []) if rel == "CO_OCCURS" else ("graph_links", [rel])
                ties = f", e.{there}" if rel == "CO_OCCURS" else ""   # as its indexes order them
                parts.append(f"SELECT * FROM (SELECT e.source_id, e.target_id, e.weight, ? AS relation, ? AS via "
                             f"FROM {table} e JOIN graph_nodes n ON n.id = e.{there} "
                             f"WHERE e.{here} = ?{' AND e.relation_type = ?' * len(only)} AND e.weight > ? "
                             f"AND +e.namespace IN ({marks}) AND +n.namespace IN ({marks}){kind} "
                             f"ORDER BY e.weight DESC{ties} LIMIT ?)")
                args += [rel, n, n, *only, above, *namespaces, *namespaces, limit]
    if not parts:
        return []
    rows = conn.execute(" UNION ALL ".join(parts), args).fetchall()
    return [r[:4] + (r[4],) if relation else (r[0], r[1], r[2], r[4]) for r in rows]


def _stats(nodes: dict[str, int], edges: dict[str, int], by_ns: dict[str, dict[str, int]]) -> dict[str, Any]:
    n, e = sum(nodes.values()), sum(edges.values())
    return {"nodes": n, "edges": e, "density": round(e / (n * (n - 1)), 6) if n > 1 else 0.0,
            "nodes_by_type": {t: nodes.get(t, 0) for t in NODE_TYPES},
            "edges_by_type": {t: edges.get(t, 0) for t in RELATION_TYPES},
            "by_namespace": dict(sorted(by_ns.items()))}
