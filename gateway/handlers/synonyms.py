"""Synonyms (admin): POST /api/v1/admin/synonyms, GET /api/v1/admin/synonyms."""

from __future__ import annotations

import asyncio

from aiohttp import web

from commands.parsing import NAMESPACE_RE, parse_add_synonyms
from gateway.appkeys import COMMANDS, SETTINGS, STORE, SYNONYMS
from gateway.auth import require_admin
from gateway.errors import ApiError
from gateway.requests import after_param, json_body, json_response, wait_for_projections

READS = ["synonyms"]
MAX_LIST = 10_000


async def add(request: web.Request) -> web.Response:
    require_admin(request)
    body, _ = await json_body(request)
    cmd = parse_add_synonyms(body, request.app[SETTINGS].limits)
    done = await request.app[COMMANDS].add_synonyms(cmd)
    return json_response({"term": done.term, "synonyms": done.synonyms, "namespace": done.namespace,
                          "position": done.position}, status=201)


def _list_params(request: web.Request) -> tuple[str | None, int]:
    namespace = request.query.get("namespace")
    if namespace is not None and not NAMESPACE_RE.match(namespace):
        raise ApiError(400, "invalid_request", "namespace: has an invalid format", {"field": "namespace"})
    raw = request.query.get("limit", "1000")
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIST:
        raise ApiError(400, "invalid_request", f"limit: must be an integer in 1..{MAX_LIST}", {"field": "limit"})
    return namespace, int(raw)


async def listing(request: web.Request) -> web.Response:
    require_admin(request)
    namespace, limit = _list_params(request)
    await wait_for_projections(request, after_param(request), READS)
    reader = request.app[SYNONYMS]
    rows = await asyncio.to_thread(reader.additions, namespace, limit)
    return json_response({"synonyms": rows, "total": len(rows),
                          "position": await request.app[STORE].checkpoint("synonyms")})


def routes() -> list[web.RouteDef]:
    return [web.post("/api/v1/admin/synonyms", add), web.get("/api/v1/admin/synonyms", listing)]
