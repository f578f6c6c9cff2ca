"""The aiohttp app factory: middlewares, routes, resources. Nothing imports `gateway`."""

from __future__ import annotations

import time

import structlog
from aiohttp import web

from events.clock import SystemClock
from gateway.http.appkeys import CLOCK, EMBEDDER, SETTINGS
from gateway.http.auth import PRINCIPAL, auth_middleware
from gateway.http.epoch_guard import epoch_middleware
from gateway.http.errors import error_middleware
from gateway.http.request_schema import unknown_query_middleware
from gateway.http.handlers import (
    admin, agents, evaluation, feedback, graph, memories, recall, synonyms, system, tombstones,
)
from gateway.process.runtime import resources
from gateway.process.settings import Settings

access_log = structlog.get_logger("zhiyi.access")


@web.middleware
async def access_log_middleware(request: web.Request, handler) -> web.StreamResponse:
    started = time.perf_counter()
    response = await handler(request)
    who = request.get(PRINCIPAL)
    access_log.info("http", method=request.method, path=request.path, status=response.status,
                    ms=round((time.perf_counter() - started) * 1000, 2),
                    agent=(who.agent_id or "admin") if who else None)
    return response


def create_app(settings: Settings, *, embedder=None, clock=None) -> web.Application:
    """Build the app. `embedder` may be injected (tests share one loaded model); else settings choose it.
    `clock` (events.clock) is the scheduler's and the query-time scores' now; the system clock by default."""
    app = web.Application(
        client_max_size=settings.max_body_bytes,
        middlewares=[access_log_middleware, error_middleware, epoch_middleware, auth_middleware,
                     unknown_query_middleware],
    )
    app[SETTINGS] = settings
    if embedder is not None:
        app[EMBEDDER] = embedder
    app[CLOCK] = clock if clock is not None else SystemClock()
    app.cleanup_ctx.append(resources)
    for module in (system, agents, memories, feedback, admin, tombstones, recall, synonyms, evaluation, graph):
        app.add_routes(module.routes())
    return app
