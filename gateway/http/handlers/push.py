"""GET /api/v1/ws/{agent_id}: the agent's push socket (seed 2.7).

The agent's own key (`X-API-Key`, or `?api_key=` where a client cannot set headers, as browsers)
or the admin key; another agent's key is 403. `?after=<position>` resumes: every message after it
is sent first, in order. Server -> client text frames are JSON `{type, position, data}`: first
`connected` (the position live delivery starts after), then the push types, and `resync` before a
close with code 4000 when the client fell too far behind (reconnect with `after=` that position).
Frames from the client are ignored (pings are answered by the WebSocket layer).
"""

from __future__ import annotations

import contextlib
import socket

import structlog
from aiohttp import WSMsgType, web

from commands.error_codes import ErrorCode
from gateway.http.appkeys import COMMANDS, PUSH
from gateway.http.auth import own_or_admin
from gateway.http.errors import ApiError
from gateway.http.requests import after_param
from gateway.push.connection import PushConnection

log = structlog.get_logger(__name__)

HEARTBEAT_S = 30.0
MAX_CLIENT_FRAME = 4096
SEND_BUFFER = 64 * 1024


async def push_socket(request: web.Request) -> web.StreamResponse:
    agent_id, _ = own_or_admin(request, "open its socket")
    if await request.app[COMMANDS].actor_for(agent_id) is None:
        raise ApiError(404, ErrorCode.UNKNOWN_AGENT, f"agent {agent_id} is not registered", {"agent_id": agent_id})
    after = after_param(request)
    hub = request.app[PUSH]
    if hub.connections(agent_id) >= hub.limits.per_agent:
        raise ApiError(429, ErrorCode.RATE_LIMITED,
                       f"agent {agent_id} already holds {hub.limits.per_agent} sockets on this gateway",
                       {"agent_id": agent_id, "limit": hub.limits.per_agent})
    ws = web.WebSocketResponse(heartbeat=HEARTBEAT_S, compress=False, max_msg_size=MAX_CLIENT_FRAME)
    if not ws.can_prepare(request).ok:
        raise ApiError(400, ErrorCode.INVALID_REQUEST,
                       "this endpoint speaks WebSocket: send an Upgrade: websocket request", {})
    await ws.prepare(request)
    transport = request.transport
    _bound_kernel_buffer(transport)
    conn = PushConnection(ws, agent_id, hub.limits, abort=lambda: transport.abort() if transport else None)
    log.info("push.connected", agent=agent_id, after=after)
    try:
        await hub.attach(conn, after)
        async for msg in ws:
            if msg.type == WSMsgType.ERROR:
                break
    except (ConnectionError, RuntimeError) as exc:   # the client went away while we wrote
        log.info("push.client_gone", agent=agent_id, error=str(exc))
    finally:
        await hub.detach(conn)
        log.info("push.disconnected", agent=agent_id, sent=conn.sent, overflowed=conn.overflowed)
    return ws


def _bound_kernel_buffer(transport) -> None:
    """A fixed send buffer: the kernel's autotuning may give a socket megabytes that a client which does
    not read would pin (pushes are small and rare, they need no more)."""
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)


def routes() -> list[web.RouteDef]:
    return [web.get("/api/v1/ws/{agent_id}", push_socket)]
