"""Every route, read or write: what a LAN replica serves from its own projections (read) and what it
forwards to its primary (write). README's "Routes on a replica" table is this one
(`tests/unit/test_route_kinds.py` keeps the app, this table and the README in step).

A read may record something on the side (a recall's audit): a replica sends those to its primary as
operations (`replicas.audit_sink`). Feedback votes are writes that a replica buffers while its primary
is unreachable (`BUFFERED`) instead of answering 503.
"""

from __future__ import annotations

from aiohttp import web

READ, WRITE = "read", "write"

ROUTES: dict[tuple[str, str], str] = {
    ("GET", "/health"): READ,
    ("GET", "/api/v1/openapi.json"): READ,
    ("GET", "/api/v1/stats"): READ,
    ("GET", "/metrics"): READ,
    ("GET", "/api/v1/metrics/self"): READ,
    ("GET", "/api/v1/instances"): READ,
    ("POST", "/api/v1/recall"): READ,
    ("GET", "/api/v1/recall"): READ,
    ("GET", "/api/v1/bootstrap"): READ,
    ("GET", "/api/v1/memory/{memory_id}/versions"): READ,
    ("GET", "/api/v1/episodes/{episode_id}"): READ,
    ("GET", "/api/v1/graph/stats"): READ,
    ("POST", "/api/v1/graph/navigate"): READ,
    ("POST", "/api/v1/graph/query"): READ,
    ("GET", "/api/v1/conflicts"): READ,
    ("GET", "/api/v1/triggers"): READ,
    ("GET", "/api/v1/consolidation"): READ,
    ("GET", "/api/v1/eval/history"): READ,
    ("GET", "/api/v1/admin/tombstones"): READ,
    ("GET", "/api/v1/admin/audit"): READ,
    ("GET", "/api/v1/admin/backups"): READ,
    ("POST", "/api/v1/admin/backup"): READ,
    ("GET", "/api/v1/admin/synonyms"): READ,
    ("GET", "/api/v1/ws/{agent_id}"): READ,
    ("GET", "/api/v1/skills"): READ,
    ("GET", "/api/v1/gaps"): READ,
    ("GET", "/api/v1/l3/worldmodel"): READ,
    ("POST", "/api/v1/trace/vprop"): WRITE,
    ("POST", "/api/v1/skills/{name}/trial"): WRITE,
    ("POST", "/api/v1/agents/register"): WRITE,
    ("POST", "/api/v1/agents/{agent_id}/rotate-key"): WRITE,
    ("POST", "/api/v1/agents/{agent_id}/revoke"): WRITE,
    ("POST", "/api/v1/commit"): WRITE,
    ("POST", "/api/v1/sessions/{session_id}/close"): WRITE,
    ("POST", "/api/v1/batch-commit"): WRITE,
    ("DELETE", "/api/v1/distilled/{memory_id}"): WRITE,
    ("POST", "/api/v1/episodes"): WRITE,
    ("POST", "/api/v1/episodes/batch"): WRITE,
    ("POST", "/api/v1/feedback/useful"): WRITE,
    ("POST", "/api/v1/feedback/not-useful"): WRITE,
    ("POST", "/api/v1/feedback/deprecate"): WRITE,
    ("POST", "/api/v1/feedback/correct"): WRITE,
    ("POST", "/api/v1/conflicts/resolve"): WRITE,
    ("POST", "/api/v1/admin/unmerge"): WRITE,
    ("POST", "/api/v1/admin/forget"): WRITE,
    ("POST", "/api/v1/admin/tick"): WRITE,
    ("POST", "/api/v1/admin/synonyms"): WRITE,
    ("POST", "/api/v1/eval/run"): WRITE,
    ("POST", "/api/v1/eval/generate"): WRITE,
    ("POST", "/api/v1/admin/triggers/run"): WRITE,
    ("POST", "/api/v1/admin/triggers/{name}/pause"): WRITE,
    ("POST", "/api/v1/admin/triggers/{name}/resume"): WRITE,
    ("POST", "/api/v1/admin/consolidate"): WRITE,
    ("POST", "/api/v1/admin/consolidation/steps/{step}/enable"): WRITE,
    ("POST", "/api/v1/admin/replicas"): WRITE,
    ("POST", "/api/v1/replicas/{instance_id}/ops"): WRITE,
}

BUFFERED: dict[tuple[str, str], str] = {
    ("POST", "/api/v1/feedback/useful"): "useful",
    ("POST", "/api/v1/feedback/not-useful"): "not_useful",
}
"""Writes a replica buffers (answering 202) while its primary is unreachable: route -> verdict."""


def route_of(request: web.Request) -> tuple[str, str] | None:
    """(method, route template) of a request's matched route; None when no route matched."""
    resource = request.match_info.route.resource
    if resource is None:
        return None
    return ("GET" if request.method == "HEAD" else request.method, resource.canonical)


def is_write(request: web.Request) -> bool:
    route = route_of(request)
    return route is not None and ROUTES.get(route) == WRITE
