"""GET /health (no auth), GET /api/v1/stats, GET /api/v1/openapi.json."""

from __future__ import annotations

import asyncio

from aiohttp import web

from commands.error_codes import ErrorCode
from events.errors import LogResetError
from gateway.process.lag import lag
from gateway.process.replica_side import replication_link_of
from replicas.runtime import ReplicaRuntime
from gateway.http.appkeys import EMBEDDER, EPOCH_GUARD, QUERIES, RECALL, REPLICA, SETTINGS, STORE
from gateway.http.errors import error_response
from gateway.http.openapi import openapi_document
from gateway.http.queues import queues
from gateway.http.requests import acting_agent, after_param, json_response, wait_for_projections


async def health(request: web.Request) -> web.Response:
    store = request.app[STORE]
    redis_ok = await store.ping()
    settings = request.app[SETTINGS]
    # `primary`/`link` describe a replica's link to its primary: none on a primary
    body: dict = {"status": "ok" if redis_ok else "degraded", "redis": redis_ok,
                  "role": "replica" if settings.is_replica else "primary", "instance_id": settings.instance_id,
                  "primary": None, "link": None, "embedding_model": request.app[EMBEDDER].model_id,
                  "serving_index": _serving_index(request)}
    replica = request.app.get(REPLICA)
    if replica is not None:
        body.update(await _replica_health(request, replica))
    if redis_ok:
        last, projectors = await request.app[QUERIES].stats.projectors()
        guard = request.app[EPOCH_GUARD]
        body["log"] = {"last_position": last, "epoch": await store.log_epoch()}
        body["projections"] = {"epoch": guard.serving}
        body["projectors"] = projectors
        behind = await lag(store, last, projectors)
        body.update(lag_ms=behind["lag_ms"], lag_events=behind["lag_events"])
        try:
            await guard.check()
        except LogResetError as exc:  # the one error shape, the health document in its details
            body["status"] = "log_reset"
            return error_response(503, ErrorCode.LOG_RESET, str(exc), body)
    if not redis_ok:  # the one error shape, the health document in its details
        return error_response(503, ErrorCode.UNAVAILABLE, "the event log (Redis) is unreachable", body)
    return json_response(body)


def _serving_index(request: web.Request) -> dict | None:
    """Whether recalls are served from memory yet (while it loads, LanceDB serves them, slower), and
    the memories checkpoint it reflects. None: this process serves from LanceDB only."""
    index = request.app[RECALL].index
    return None if index is None else {"ready": index.ready, "position": index.position}


async def _replica_health(request: web.Request, replica: ReplicaRuntime) -> dict:
    """A replica's link: its Redis replicating the primary's (`link`; down: `status` degraded, reads
    still served), whether its last request to the primary got through, and its buffered votes."""
    link = await replication_link_of(request.app[STORE])
    out = {"primary": replica.client.base_url, "primary_redis": replica.primary_redis, "link": link,
           "primary_http": {None: "unknown", True: "up", False: "down"}[replica.client.reachable],
           "buffered": (await asyncio.to_thread(replica.outbox.counts))["pending"]}
    if link != "up":
        out["status"] = "degraded"
    return out


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
