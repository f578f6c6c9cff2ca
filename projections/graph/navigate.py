"""Multi-hop navigation between two graph nodes (seed 2.5.4).

``navigate(conn, source, target, namespaces)`` returns the best simple paths from ``source`` to
``target`` of 1..``max_hops`` (<= 3) edges, as a bidirectional search that meets in the middle:

- forward from ``source``: its neighbours A (hop 1), then the edges from A that land in B (hop 2);
- backward from ``target``: its neighbours B (1 hop);
- a path is source -> target (a direct edge), source -> m -> target (m in A and B), or
  source -> a -> b -> target (a in A, b in B, an edge a-b), so every simple path of up to 3 hops
  is found whenever the frontier bounds below did not cut it.

Rules:

- Edges are traversable in both directions; an edge keeps its stored ``source_id``/``target_id``
  in the output. Between two nodes only the heaviest edge counts (ties: the smaller edge id), so
  two paths never differ by their edges alone. A NULL weight counts as the schema default 0.5.
- Score = the product of the path's edge weights. Paths are sorted by score descending, then
  fewer hops, then their node ids lexicographically; at most ``max_paths`` are returned.
- Simple paths only: no node appears twice (self-loops are never followed).
- Namespace isolation: only nodes and edges whose namespace is in ``namespaces`` are seen, and a
  source or target that is unknown or not visible raises ``GraphNotFound``.
- Bounds, so that a hub cannot blow up a request: each end keeps its ``MAX_NEIGHBOURS`` heaviest
  edges, and the middle hop reads at most ``MAX_MIDDLE_EDGES`` edges (heaviest first per chunk).
  All reads are indexed (``source_id``/``target_id`` ``IN (...)`` in chunks); nothing loads the
  whole table. Namespace filters are written ``+x.namespace IN (...)``: the unary ``+`` keeps
  SQLite's planner off the low-selectivity namespace indexes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from projections.core.errors import InvalidQuery, ProjectionError

__all__ = ["GraphNotFound", "MAX_HOPS", "MAX_NEIGHBOURS", "MAX_MIDDLE_EDGES", "Path", "navigate"]

MAX_HOPS = 3
MAX_NEIGHBOURS = 200
MAX_MIDDLE_EDGES = 5000
DEFAULT_WEIGHT = 0.5
_CHUNK = 200
_EDGE_COLS = "e.id, e.source_id, e.target_id, e.relation_type, COALESCE(e.weight, 0.5)"

Edge = tuple[str, str, str, str, float]  # id, source_id, target_id, relation_type, weight


class GraphNotFound(ProjectionError, LookupError):
    """A node id that does not exist, or is not visible in the reader's namespaces."""

    def __init__(self, node_id: str) -> None:
        super().__init__(node_id)
        self.node_id = node_id


@dataclass(frozen=True)
class Path:
    """One path: ``nodes`` (id, type, label, namespace) from source to target, the ``edges``
    between consecutive nodes (id, source_id, target_id, relation_type, weight), and ``score``."""

    nodes: tuple[dict[str, Any], ...]
    edges: tuple[dict[str, Any], ...]
    score: float


def navigate(
    conn: sqlite3.Connection, source: str, target: str, namespaces: Sequence[str],
    max_hops: int = MAX_HOPS, max_paths: int = 3,
) -> list[Path]:
    """The best ``max_paths`` simple paths from ``source`` to ``target`` (module docstring rules).

    Raises ``GraphNotFound`` for an unknown or invisible end, ``InvalidQuery`` for ``max_hops``
    outside 1..3 or ``max_paths`` < 1.
    """
    if isinstance(max_hops, bool) or not isinstance(max_hops, int) or not 1 <= max_hops <= MAX_HOPS:
        raise InvalidQuery(f"max_hops must be an integer in 1..{MAX_HOPS}, got {max_hops!r}")
    if isinstance(max_paths, bool) or not isinstance(max_paths, int) or max_paths < 1:
        raise InvalidQuery(f"max_paths must be a positive integer, got {max_paths!r}")
    ns = list(dict.fromkeys(namespaces))
    visible = _nodes(conn, {source, target}, ns)
    for node_id in (source, target):
        if node_id not in visible:
            raise GraphNotFound(node_id)
    if source == target:
        return []

    candidates: dict[tuple[str, ...], tuple[Edge, ...]] = {}
    direct = _best_between(conn, [source], [target], ns, MAX_NEIGHBOURS)
    if direct:
        candidates[(source, target)] = (next(iter(direct.values())),)
    if max_hops >= 2:
        forward = _neighbours(conn, source, ns)
        backward = _neighbours(conn, target, ns)
        forward.pop(target, None)
        backward.pop(source, None)
        for mid in sorted(forward.keys() & backward.keys()):
            candidates[(source, mid, target)] = (forward[mid], backward[mid])
        if max_hops >= 3 and forward and backward:
            middle = _best_between(conn, sorted(forward), sorted(backward), ns, MAX_MIDDLE_EDGES)
            for (a, b), edge in middle.items():
                for x, y in ((a, b), (b, a)):
                    if x in forward and y in backward and x != y:
                        candidates[(source, x, y, target)] = (forward[x], edge, backward[y])

    ranked = sorted(candidates.items(), key=lambda kv: (-round(_score(kv[1]), 12), len(kv[0]), kv[0]))
    best = ranked[:max_paths]
    details = _nodes(conn, {n for ids, _ in best for n in ids}, ns)
    return [
        Path(nodes=tuple(details[n] for n in ids), edges=tuple(_edge_dict(e) for e in edges), score=_score(edges))
        for ids, edges in best
    ]


def _score(edges: Iterable[Edge]) -> float:
    score = 1.0
    for edge in edges:
        score *= edge[4]
    return score


def _edge_dict(edge: Edge) -> dict[str, Any]:
    return dict(zip(("id", "source_id", "target_id", "relation_type", "weight"), edge))


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


def _chunks(values: Sequence[str]) -> Iterable[list[str]]:
    for i in range(0, len(values), _CHUNK):
        yield list(values[i:i + _CHUNK])


def _nodes(conn: sqlite3.Connection, ids: set[str], ns: list[str]) -> dict[str, dict[str, Any]]:
    """The visible nodes among ``ids``, as dicts keyed by id."""
    out: dict[str, dict[str, Any]] = {}
    if not ns:
        return out
    for chunk in _chunks(sorted(ids)):
        rows = conn.execute(
            f"SELECT id, type, label, namespace FROM graph_nodes WHERE id IN ({_marks(chunk)})"
            f" AND +namespace IN ({_marks(ns)})", [*chunk, *ns])
        for row in rows:
            out[row[0]] = {"id": row[0], "type": row[1], "label": row[2], "namespace": row[3]}
    return out


def _better(edge: Edge, than: Edge | None) -> bool:
    return than is None or (edge[4], than[0]) > (than[4], edge[0])


def _neighbours(conn: sqlite3.Connection, node: str, ns: list[str]) -> dict[str, Edge]:
    """Visible neighbours of ``node`` through visible edges: neighbour -> its heaviest edge.

    Reads the ``MAX_NEIGHBOURS`` heaviest incident edges (both directions), self-loops excluded.
    """
    m = _marks(ns)
    sql = (
        f"SELECT {_EDGE_COLS}, e.target_id AS other FROM graph_edges e JOIN graph_nodes n ON n.id = e.target_id"
        f" WHERE e.source_id = ? AND e.target_id != e.source_id AND +e.namespace IN ({m}) AND +n.namespace IN ({m})"
        f" UNION ALL"
        f" SELECT {_EDGE_COLS}, e.source_id AS other FROM graph_edges e JOIN graph_nodes n ON n.id = e.source_id"
        f" WHERE e.target_id = ? AND e.target_id != e.source_id AND +e.namespace IN ({m}) AND +n.namespace IN ({m})"
        f" ORDER BY 5 DESC, 1 LIMIT ?"
    )
    out: dict[str, Edge] = {}
    for row in conn.execute(sql, [node, *ns, *ns, node, *ns, *ns, MAX_NEIGHBOURS]):
        edge: Edge = tuple(row)[:5]  # type: ignore[assignment]
        if _better(edge, out.get(row[5])):
            out[row[5]] = edge
    return out


def _best_between(
    conn: sqlite3.Connection, left: Sequence[str], right: Sequence[str], ns: list[str], cap: int,
) -> dict[tuple[str, str], Edge]:
    """Visible edges joining a node of ``left`` and a node of ``right`` (either direction), at most
    ``cap`` read: unordered pair (sorted) -> its heaviest edge. The ends are known to be visible."""
    out: dict[tuple[str, str], Edge] = {}
    read = 0
    for a_side, b_side in ((left, right), (right, left)):
        for chunk in _chunks(a_side):
            for b_chunk in _chunks(b_side):
                if read >= cap:
                    return out
                rows = conn.execute(
                    f"SELECT {_EDGE_COLS} FROM graph_edges e WHERE e.source_id IN ({_marks(chunk)})"
                    f" AND e.target_id IN ({_marks(b_chunk)}) AND e.source_id != e.target_id"
                    f" AND +e.namespace IN ({_marks(ns)}) ORDER BY 5 DESC, 1 LIMIT ?",
                    [*chunk, *b_chunk, *ns, cap - read]).fetchall()
                read += len(rows)
                for row in rows:
                    edge: Edge = tuple(row)  # type: ignore[assignment]
                    pair = (min(edge[1], edge[2]), max(edge[1], edge[2]))
                    if _better(edge, out.get(pair)):
                        out[pair] = edge
    return out
