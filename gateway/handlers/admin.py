"""Admin runs: POST /api/v1/admin/forget (seed 3.3.1 eviction, on demand)."""

from __future__ import annotations

import asyncio

from aiohttp import web

from commands.parsing import NAMESPACE_RE, opt_int, opt_str, require_object
from gateway.appkeys import ACTIVITY, COMMANDS, READER, SETTINGS, STORE, WAITER
from gateway.auth import require_admin
from gateway.errors import ApiError
from gateway.requests import json_body, json_response
from projections.queries.forgetting import choose, live_rows

MAX_CAPACITY = 10_000_000


async def forget(request: web.Request) -> web.Response:
    """Evict what the rules say: quality_low, deprecated, then LRU above the per-namespace capacity.
    `dry_run` answers the plan without appending anything."""
    require_admin(request)
    body, _ = await json_body(request, required=False)
    body = require_object(body)
    settings = request.app[SETTINGS]
    capacity = opt_int(body, "capacity", minimum=1, maximum=MAX_CAPACITY, default=settings.forget_capacity)
    namespace = opt_str(body, "namespace", max_chars=64, pattern=NAMESPACE_RE)
    dry_run = body.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise ApiError(400, "invalid_request", "dry_run: must be a boolean", {"field": "dry_run"})
    store, waiter, reader = request.app[STORE], request.app[WAITER], request.app[READER]

    async def plan():
        last = await store.last_position()  # decide on a projection that has seen everything so far
        if last and not await waiter.wait(["memories", "activity"], last, settings.projection_wait_s):
            raise ApiError(504, "projection_lag", "the memories projection is behind the log; retry",
                           {"after": last, "projections": ["memories", "activity"]})
        rows = await asyncio.to_thread(live_rows, reader, request.app[ACTIVITY], namespace)
        return choose(rows, capacity)

    if dry_run:
        chosen, position = await plan(), ""
    else:
        done = await request.app[COMMANDS].forget(plan)
        chosen, position = done.forgotten, done.position
    return json_response({"forgotten": [{"memory_id": c.memory_id, "namespace": c.namespace, "reason": c.reason}
                                        for c in chosen],
                          "count": len(chosen), "capacity": capacity, "dry_run": dry_run, "position": position})


def routes() -> list[web.RouteDef]:
    return [web.post("/api/v1/admin/forget", forget)]
