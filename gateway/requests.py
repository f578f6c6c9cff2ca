"""Request helpers shared by the handlers: JSON bodies, the acting agent, read-your-writes."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
from aiohttp import web

from commands.model import Actor, IdempotencyRequest
from commands.parsing import AGENT_ID_RE, parse_idempotency_key
from events import positions
from gateway.appkeys import COMMANDS, SETTINGS, WAITER
from gateway.auth import principal
from gateway.errors import ApiError


async def json_body(request: web.Request, *, required: bool = True) -> tuple[Any, bytes]:
    raw = await request.read()
    if not raw.strip():
        if required:
            raise ApiError(400, "invalid_json", "request body must be a JSON object")
        return {}, raw
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ApiError(400, "invalid_json", f"malformed JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_json", "request body must be a JSON object")
    return body, raw


def _agent_id_param(request: web.Request, body: dict) -> str | None:
    value = body.get("agent_id", request.query.get("agent_id"))
    if value is None:
        return None
    if not isinstance(value, str) or not AGENT_ID_RE.match(value):
        raise ApiError(400, "invalid_request", "agent_id: must be a valid agent id", {"field": "agent_id"})
    return value


async def acting_agent(request: web.Request, body: dict, *, required: bool = True) -> Actor | None:
    """The agent a request acts as. The admin key names it with `agent_id`; an agent key is itself."""
    who = principal(request)
    named = _agent_id_param(request, body)
    commands = request.app[COMMANDS]
    if who.is_admin:
        if named is None:
            if required:
                raise ApiError(400, "agent_id_required",
                               "the admin key must name the agent it acts for with agent_id", {"field": "agent_id"})
            return None
        return await commands.require_actor(named, by="admin")
    if named is not None and named != who.agent_id:
        raise ApiError(403, "forbidden", "only the admin key may act for another agent",
                       {"agent_id": named})
    return await commands.require_actor(who.agent_id)


def idempotency(request: web.Request, raw_body: bytes, endpoint: str) -> IdempotencyRequest | None:
    key = parse_idempotency_key(request.headers.get("Idempotency-Key"))
    if key is None:
        return None
    try:
        canonical = orjson.dumps(orjson.loads(raw_body), option=orjson.OPT_SORT_KEYS)
    except orjson.JSONDecodeError:
        canonical = raw_body
    fingerprint = hashlib.sha256(endpoint.encode() + b"\n" + canonical).hexdigest()
    return IdempotencyRequest(key, fingerprint)


def after_param(request: web.Request, body: dict | None = None) -> str | None:
    value = (body or {}).get("after") or request.query.get("after") or request.headers.get("X-Zhiyi-After")
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not positions.is_valid(value):
        raise ApiError(400, "invalid_request", "after: must be a position returned by a write (e.g. '1700000000000-0')",
                       {"field": "after"})
    return value


async def wait_for_projections(request: web.Request, after: str | None, names: list[str]) -> None:
    """Read-your-writes: wait until the projections this endpoint reads reached `after`."""
    if not after:
        return
    timeout = request.app[SETTINGS].projection_wait_s
    if not await request.app[WAITER].wait(names, after, timeout):
        raise ApiError(504, "projection_lag",
                       f"projections did not reach position {after} within {timeout:g} s",
                       {"after": after, "projections": names})


def json_response(data: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(data) + b"\n", content_type="application/json")
