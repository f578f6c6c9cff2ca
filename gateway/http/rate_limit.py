"""Per-agent rate limits at the edge (seed 2.7; `commands.rate_limits`): every request an agent key
makes, or the admin key makes acting for an agent (`agent_id`), takes a token from that agent's `read`
or `write` bucket (`gateway.http.route_kinds`; a batch is one write). The admin key alone is never
limited. An empty bucket answers 429 `rate_limited` with `Retry-After` and `X-RateLimit-Limit`
(the burst), `-Remaining` and `-Reset` (unix seconds when the bucket is full again), which every
charged answer carries too. On a replica, writes are limited by the primary they are forwarded to.
While Redis cannot be reached the buckets cannot be read: requests pass (reads are still served)."""

from __future__ import annotations

import math

import orjson
import structlog
from aiohttp import web

from commands.error_codes import ErrorCode
from events.redis.client import TRANSIENT_ERRORS
from gateway.http.appkeys import RATE_LIMITER
from gateway.http.auth import PRINCIPAL
from gateway.http.errors import ApiError
from gateway.http.requests import read_body
from gateway.http.route_kinds import ROUTES, route_of

log = structlog.get_logger(__name__)


@web.middleware
async def rate_limit_middleware(request: web.Request, handler) -> web.StreamResponse:
    limiter = request.app.get(RATE_LIMITER)
    who = request.get(PRINCIPAL)
    route = route_of(request)
    kind = ROUTES.get(route) if route is not None else None
    if limiter is None or who is None or kind is None:
        return await handler(request)
    agent_id = who.agent_id if not who.is_admin else await _acting_for(request)
    if agent_id is None:
        return await handler(request)
    try:
        charged = await limiter.take(agent_id, kind)
    except TRANSIENT_ERRORS as exc:      # Redis away: reads go on being served (writes fail on their own)
        log.warning("rate_limit.unavailable", agent=agent_id, error=f"{type(exc).__name__}: {exc}")
        return await handler(request)
    if charged is None:                  # no such agent: the handler answers it
        return await handler(request)
    quota, taken = charged
    headers = {"X-RateLimit-Limit": str(quota.burst), "X-RateLimit-Remaining": str(taken.remaining),
               "X-RateLimit-Reset": str(math.ceil(taken.reset_ms / 1000))}
    if not taken.allowed:
        retry = max(1, math.ceil(taken.retry_after_ms / 1000))
        raise ApiError(429, ErrorCode.RATE_LIMITED,
                       f"agent {agent_id} is over its {kind} quota ({quota.rate:g}/s, burst {quota.burst}): "
                       f"retry after {retry} s", {"agent_id": agent_id, "kind": kind, "rate": quota.rate,
                                                  "burst": quota.burst},
                       headers={"Retry-After": str(retry), **headers})
    response = await handler(request)
    response.headers.update(headers)
    return response


async def _acting_for(request: web.Request) -> str | None:
    """The agent the admin key acts for: `agent_id` in the query or the JSON body (None: itself)."""
    named = request.query.get("agent_id")
    if named is None and request.can_read_body and request.content_type == "application/json":
        try:
            body = orjson.loads(await read_body(request))
        except orjson.JSONDecodeError:
            return None
        named = body.get("agent_id") if isinstance(body, dict) else None
    return named if isinstance(named, str) and named else None
