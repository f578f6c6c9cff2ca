"""The knowledge graph and conflicts."""

from __future__ import annotations

from collections.abc import Sequence

from ..calls import Call, fields, params
from ..models import Response
from ._build import action, get, post_read


def graph_stats(*, namespace: str | None = None, include_namespaces: Sequence[str] | None = None,
                agent_id: str | None = None, after: str | None = None) -> Call[Response]:
    """Node and edge counts of the graphs the caller may read (`GET /api/v1/graph/stats`)."""
    query = params(namespace=namespace, include_namespaces=include_namespaces, agent_id=agent_id)
    return get("/api/v1/graph/stats", Response.from_json, query, after=after)


def graph_navigate(source: str, target: str, *, max_hops: int | None = None, namespace: str | None = None,
                   include_namespaces: Sequence[str] | None = None, agent_id: str | None = None,
                   after: str | None = None) -> Call[Response]:
    """Up to 3 paths between two nodes (`POST /api/v1/graph/navigate`): `{paths: [{nodes, edges, score}]}`."""
    body = fields(source=source, target=target, max_hops=max_hops, namespace=namespace,
                  include_namespaces=include_namespaces, agent_id=agent_id)
    return post_read("/api/v1/graph/navigate", Response.from_json, body, after=after)


def graph_query(query: str, *, namespace: str | None = None, include_namespaces: Sequence[str] | None = None,
                agent_id: str | None = None, after: str | None = None) -> Call[Response]:
    """A query in the graph's pattern language (`MATCH ... RETURN ...`): `{columns, rows}`."""
    body = fields(query=query, namespace=namespace, include_namespaces=include_namespaces, agent_id=agent_id)
    return post_read("/api/v1/graph/query", Response.from_json, body, after=after)


def conflicts(*, status: str | None = None, namespace: str | None = None, limit: int | None = None,
              offset: int | None = None, agent_id: str | None = None, after: str | None = None) -> Call[Response]:
    """Conflicts between memories in the caller's scope (`GET /api/v1/conflicts`; status open,
    resolved or all)."""
    query = params(status=status, namespace=namespace, limit=limit, offset=offset, agent_id=agent_id)
    return get("/api/v1/conflicts", Response.from_json, query, after=after)


def resolve_conflict(conflict_id: str, strategy: str, *, winner: str | None = None, agent_id: str | None = None,
                     after: str | None = None) -> Call[Response]:
    """Settle a conflict (`POST /api/v1/conflicts/resolve`; strategy ask_user (with `winner`),
    latest_wins, primary_wins, keep_both, auto_merge). A resolved conflict raises `Conflict`."""
    body = fields(conflict_id=conflict_id, strategy=strategy, winner=winner, agent_id=agent_id)
    return action("/api/v1/conflicts/resolve", Response.from_json, body, after=after, waits=True)


def unmerge(memory_id: str) -> Call[Response]:
    """Undo a merge (admin; `POST /api/v1/admin/unmerge`)."""
    return action("/api/v1/admin/unmerge", Response.from_json, fields(memory_id=memory_id))
