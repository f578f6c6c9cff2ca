"""GET /health (no auth), GET /api/v1/stats, GET /api/v1/openapi.json."""

from __future__ import annotations

from aiohttp import web

from commands.error_codes import ErrorCode
from events.errors import LogResetError
from events import positions
from events.redis.instances import Instances
from gateway.http.appkeys import EPOCH_GUARD, QUERIES, SETTINGS, STORE
from gateway.http.errors import error_response
from gateway.http.openapi import openapi_document
from gateway.http.queues import queues
from gateway.http.requests import acting_agent, after_param, json_response, wait_for_projections


async def health(request: web.Request) -> web.Response:
    store = request.app[STORE]
    redis_ok = await store.ping()
    settings = request.app[SETTINGS]
    # `primary`/`link` describe a replica's link to its primary: none on a primary (LAN replicas: to come)
    body: dict = {"status": "ok" if redis_ok else "degraded", "redis": redis_ok, "role": "primary",
                  "instance_id": settings.instance_id, "primary": None, "link": None}
    if redis_ok:
        last, projectors = await request.app[QUERIES].stats.projectors()
        guard = request.app[EPOCH_GUARD]
        body["log"] = {"last_position": last, "epoch": await store.log_epoch()}
        body["projections"] = {"epoch": guard.serving}
        body["projectors"] = projectors
        body.update(await _lag(store, last, projectors))
        try:
            await guard.check()
        except LogResetError as exc:  # the one error shape, the health document in its details
            body["status"] = "log_reset"
            return error_response(503, ErrorCode.LOG_RESET, str(exc), body)
    if not redis_ok:  # the one error shape, the health document in its details
        return error_response(503, ErrorCode.UNAVAILABLE, "the event log (Redis) is unreachable", body)
    return json_response(body)


async def _lag(store, last: str | None, projectors: dict[str, dict]) -> dict:
    """How far the slowest projection is behind the log: `lag_ms` (stream time) and `lag_events`
    (events after its checkpoint, counted up to 10,000); None while a projector has no checkpoint."""
    cps = [p["position"] for p in projectors.values()]
    if not last:
        return {"lag_ms": 0, "lag_events": 0}
    if not cps or None in cps:
        return {"lag_ms": None, "lag_events": None}
    slowest = min(cps, key=positions.key)
    return {"lag_ms": max(p["lag_ms"] or 0 for p in projectors.values()),
            "lag_events": await Instances(store.redis).lag_events(slowest)}


async def stats(request: web.Request) -> web.Response:
    actor = await acting_agent(request, {}, required=False)   # None: the admin key, which sees everything
    stats = request.app[QUERIES].stats
    await wait_for_projections(request, after_param(request), stats.reads)
    view = await stats.view(actor.can_read if actor is not None else None)
    body = {
        "memories": {"total": sum(view.by_namespace.values()), "by_namespace": view.by_namespace},
        "events": {"total": view.events, "last_position": view.last_position},
        "projectors": view.projectors,
    }
    if actor is None:   # the queues span every namespace: the admin's view only
        body["queues"] = await queues(request.app)
    return json_response(body)




async def openapi(request: web.Request) -> web.Response:
    return json_response(openapi_document())


def routes() -> list[web.RouteDef]:
    return [web.get("/health", health), web.get("/api/v1/stats", stats),
            web.get("/api/v1/openapi.json", openapi)]
