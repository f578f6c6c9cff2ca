"""Synonyms (admin): POST /api/v1/admin/synonyms, GET /api/v1/admin/synonyms."""

from __future__ import annotations

import asyncio

from aiohttp import web

from commands.error_codes import ErrorCode
from commands.parsing import NAMESPACE_RE, parse_add_synonyms
from gateway.http.appkeys import COMMANDS, SETTINGS, STORE, SYNONYMS
from gateway.http.auth import require_admin
from gateway.http.errors import ApiError
from gateway.http.requests import after_param, idempotency, json_body, json_response, query_int, wait_for_projections

MAX_LIST = 10_000
DEFAULT_LIST = 1_000


async def add(request: web.Request) -> web.Response:
    require_admin(request)
    body, raw = await json_body(request)
    cmd = parse_add_synonyms(body, request.app[SETTINGS].limits)
    done = await request.app[COMMANDS].add_synonyms(cmd, idempotency(request, raw, "synonyms"))
    return json_response({"term": done.term, "synonyms": done.synonyms, "namespace": done.namespace,
                          "position": done.position}, status=201)


def _list_params(request: web.Request) -> tuple[str | None, int]:
    namespace = request.query.get("namespace")
    if namespace is not None and not NAMESPACE_RE.fullmatch(namespace):
        raise ApiError(400, ErrorCode.INVALID_REQUEST, "namespace: has an invalid format", {"field": "namespace"})
    return namespace, query_int(request, "limit", default=DEFAULT_LIST, minimum=1, maximum=MAX_LIST) or DEFAULT_LIST


async def listing(request: web.Request) -> web.Response:
    require_admin(request)
    namespace, limit = _list_params(request)
    reader = request.app[SYNONYMS]
    await wait_for_projections(request, after_param(request), reader.reads)
    rows = await asyncio.to_thread(reader.additions, namespace, limit)
    return json_response({"synonyms": rows, "total": len(rows),
                          "position": await request.app[STORE].checkpoint("synonyms")})


def routes() -> list[web.RouteDef]:
    return [web.post("/api/v1/admin/synonyms", add), web.get("/api/v1/admin/synonyms", listing)]
