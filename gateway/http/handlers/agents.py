"""POST /api/v1/agents/register (admin key)."""

from __future__ import annotations

from aiohttp import web

from commands.parsing import parse_register
from gateway.http.appkeys import COMMANDS, SETTINGS
from gateway.http.auth import require_admin
from gateway.http.requests import idempotency, json_body, json_response


async def register(request: web.Request) -> web.Response:
    require_admin(request)
    body, raw = await json_body(request)
    cmd = parse_register(body)
    # a retry (same Idempotency-Key, or the same body within 24 h) answers the same api_key
    reg = await request.app[COMMANDS].register_agent(cmd, idempotency(request, raw, "register"))
    limits = request.app[SETTINGS].rate_limits
    return json_response({
        "agent_id": reg.agent_id,
        "api_key": reg.api_key,
        "namespaces": reg.namespaces,
        "position": reg.position,
        "rate_limits": limits.for_agent(cmd.agent_type).as_dict() if limits is not None else None,
    }, status=201)


def routes() -> list[web.RouteDef]:
    return [web.post("/api/v1/agents/register", register)]
