"""The knowledge graph (seed 2.5): GET /api/v1/graph/stats, POST /api/v1/graph/navigate,
POST /api/v1/graph/query. An agent sees its own namespaces' graphs plus `shared` (and others'
`-main` graphs it names in `include_namespaces`); the admin key, acting for nobody, sees all."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from commands.access import resolve_scope
from commands.error_codes import ErrorCode
from commands.parsing import NAMESPACE_RE, is_text, opt_int, opt_str, require_object, str_list
from gateway.http.appkeys import GRAPH, SETTINGS
from gateway.http.errors import ApiError
from gateway.http.requests import (
    acting_agent, after_param, json_body, json_response, namespaces_param, wait_for_projections,
)
from projections.graph.query import GraphQueryError, parse
from projections.graph.reader import GraphNotFound

NODE_ID_MAX = 512
QUERY_MAX = 2000


def _required(field: str) -> ApiError:
    return ApiError(400, ErrorCode.INVALID_REQUEST, f"{field}: is required", {"field": field})


async def _scope(request: web.Request, body: dict) -> list[str] | None:
    """The namespaces this caller may read in the graph (None: all, the admin acting for nobody)."""
    actor = await acting_agent(request, body, required=False)
    include = str_list(body, "include_namespaces", max_items=request.app[SETTINGS].limits.max_include_namespaces,
                       max_chars=64, pattern=NAMESPACE_RE)
    namespace = opt_str(body, "namespace", max_chars=64, pattern=NAMESPACE_RE)
    if actor is None and namespace is None and not include:
        return None
    return resolve_scope(actor, namespace, include)


async def stats(request: web.Request) -> web.Response:
    """Nodes, edges, density, by type and by namespace, over the graphs the caller may read."""
    body: dict[str, Any] = dict(request.query)
    if "include_namespaces" in body:
        body["include_namespaces"] = namespaces_param(request)
    scope = await _scope(request, body)
    graph = request.app[GRAPH]
    await wait_for_projections(request, after_param(request, body), graph.reads)
    out = await asyncio.to_thread(graph.stats, scope)
    return json_response({**out, "namespaces": scope if scope is not None else sorted(out["by_namespace"])})


async def navigate(request: web.Request) -> web.Response:
    """Up to 3 paths from `source` to `target` (≤ `max_hops` ≤ 3), by the product of edge weights
    (bidirectional BFS, seed 2.5.4)."""
    body, _ = await json_body(request)
    body = require_object(body)
    source = opt_str(body, "source", max_chars=NODE_ID_MAX)
    target = opt_str(body, "target", max_chars=NODE_ID_MAX)
    if not source:
        raise _required("source")
    if not target:
        raise _required("target")
    max_hops = opt_int(body, "max_hops", minimum=1, maximum=3, default=3)
    scope = await _scope(request, body)
    graph = request.app[GRAPH]
    await wait_for_projections(request, after_param(request, body), graph.reads)
    try:
        paths = await asyncio.to_thread(graph.navigate, source, target, scope, max_hops)
    except GraphNotFound as exc:
        raise ApiError(404, ErrorCode.NOT_FOUND, f"node {exc.node_id} not found", {"node": exc.node_id}) from None
    return json_response({"paths": [{"nodes": list(p.nodes), "edges": list(p.edges), "score": round(p.score, 6)}
                                    for p in paths]})


async def query(request: web.Request) -> web.Response:
    """A pattern query in the small Cypher-like language of `projections.graph.query`."""
    body, _ = await json_body(request)
    body = require_object(body)
    text = opt_str(body, "query", max_chars=QUERY_MAX)
    if not text or not is_text(text):
        raise ApiError(400, ErrorCode.INVALID_REQUEST, "query: is required", {"field": "query"})
    try:
        parsed = parse(text)
    except GraphQueryError as exc:
        raise ApiError(422, ErrorCode.INVALID_QUERY, str(exc), {"field": "query",
                                                        "position": getattr(exc, "position", None)}) from None
    scope = await _scope(request, body)
    graph = request.app[GRAPH]
    await wait_for_projections(request, after_param(request, body), graph.reads)
    return json_response(await asyncio.to_thread(graph.query, parsed, scope))


def routes() -> list[web.RouteDef]:
    return [web.get("/api/v1/graph/stats", stats), web.post("/api/v1/graph/navigate", navigate),
            web.post("/api/v1/graph/query", query)]
