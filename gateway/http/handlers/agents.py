"""POST /api/v1/agents/register (admin key); POST /api/v1/agents/{agent_id}/rotate-key and .../revoke
(the admin key, or the agent's own)."""

from __future__ import annotations

from aiohttp import web

from commands.parsing import parse_register
from gateway.http.appkeys import COMMANDS, SETTINGS
from gateway.http.auth import own_or_admin, require_admin
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
        "ws_endpoint": f"/api/v1/ws/{reg.agent_id}",
        "rate_limits": limits.for_agent(cmd.agent_type).as_dict() if limits is not None else None,
    }, status=201)


async def rotate_key(request: web.Request) -> web.Response:
    """A new key for the agent (shown once); the old one is refused from now on."""
    agent_id, by = own_or_admin(request, "change its key")
    _, raw = await json_body(request, required=False)
    reg = await request.app[COMMANDS].rotate_key(agent_id, idempotency(request, raw or b"{}", "rotate-key"), by=by)
    return json_response({"agent_id": reg.agent_id, "api_key": reg.api_key, "namespaces": reg.namespaces,
                          "position": reg.position})


async def revoke(request: web.Request) -> web.Response:
    """Withdraw the agent's key: no key works for it until one is rotated in."""
    agent_id, by = own_or_admin(request, "change its key")
    await json_body(request, required=False)
    position = await request.app[COMMANDS].revoke_key(agent_id, by=by)
    return json_response({"agent_id": agent_id, "revoked": True, "position": position})


def routes() -> list[web.RouteDef]:
    return [web.post("/api/v1/agents/register", register),
            web.post("/api/v1/agents/{agent_id}/rotate-key", rotate_key),
            web.post("/api/v1/agents/{agent_id}/revoke", revoke)]
