"""GET /health (no auth), GET /api/v1/stats, GET /api/v1/openapi.json."""

from __future__ import annotations

import asyncio

from aiohttp import web

from events import positions
from commands.error_codes import ErrorCode
from events.errors import LogResetError
from gateway.http.appkeys import EPOCH_GUARD, PROJECTORS, READER, STORE
from gateway.http.errors import error_response
from gateway.http.openapi import openapi_document
from gateway.http.requests import acting_agent, after_param, json_response, wait_for_projections


async def _projector_status(store, names: list[str]) -> tuple[str | None, dict]:
    last = await store.last_position()
    cps = await store.checkpoints()
    out = {}
    for name in names:
        cp = cps.get(name)
        lag_ms = max(0, positions.key(last)[0] - positions.key(cp)[0]) if last and cp else (0 if not last else None)
        out[name] = {"position": cp, "caught_up": positions.reached(cp, last), "lag_ms": lag_ms}
    return last, out


async def health(request: web.Request) -> web.Response:
    store = request.app[STORE]
    redis_ok = await store.ping()
    body: dict = {"status": "ok" if redis_ok else "degraded", "redis": redis_ok}
    if redis_ok:
        last, projectors = await _projector_status(store, request.app[PROJECTORS])
        guard = request.app[EPOCH_GUARD]
        body["log"] = {"last_position": last, "epoch": await store.log_epoch()}
        body["projections"] = {"epoch": guard.serving}
        body["projectors"] = projectors
        try:
            await guard.check()
        except LogResetError as exc:  # the one error shape, the health document in its details
            body["status"] = "log_reset"
            return error_response(503, ErrorCode.LOG_RESET, str(exc), body)
    if not redis_ok:  # the one error shape, the health document in its details
        return error_response(503, ErrorCode.UNAVAILABLE, "the event log (Redis) is unreachable", body)
    return json_response(body)


async def stats(request: web.Request) -> web.Response:
    actor = await acting_agent(request, {}, required=False)   # None: the admin key, which sees everything
    await wait_for_projections(request, after_param(request), ["memories"])
    store = request.app[STORE]
    reader = request.app[READER]
    by_ns, length, (last, projectors) = await asyncio.gather(
        asyncio.to_thread(reader.count_by_namespace), store.length(),
        _projector_status(store, request.app[PROJECTORS]))
    if actor is not None:  # an agent sees the namespaces it may read: never another agent's -ephemeral
        by_ns = {ns: n for ns, n in by_ns.items() if actor.can_read(ns)}
    return json_response({
        "memories": {"total": sum(by_ns.values()), "by_namespace": dict(sorted(by_ns.items()))},
        "events": {"total": length, "last_position": last},
        "projectors": projectors,
    })


async def openapi(request: web.Request) -> web.Response:
    return json_response(openapi_document())


def routes() -> list[web.RouteDef]:
    return [web.get("/health", health), web.get("/api/v1/stats", stats),
            web.get("/api/v1/openapi.json", openapi)]
