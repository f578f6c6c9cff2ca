"""X-API-Key authentication (or `Authorization: Bearer <key>`): the admin key (constant-time compare)
or an agent key (sha256 index)."""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from aiohttp import web

from commands.error_codes import ErrorCode
from gateway.http.appkeys import COMMANDS, SETTINGS
from gateway.http.errors import ApiError

PUBLIC_PATHS = frozenset({"/health", "/api/v1/openapi.json"})


@dataclass(frozen=True, slots=True)
class Principal:
    is_admin: bool
    agent_id: str | None  # the agent whose key was used (None for the admin key)


PRINCIPAL = web.RequestKey("principal", Principal)


@web.middleware
async def auth_middleware(request: web.Request, handler) -> web.StreamResponse:
    if request.path in PUBLIC_PATHS or request.method == "OPTIONS":
        return await handler(request)
    key = request.headers.get("X-API-Key") or _bearer(request.headers.get("Authorization", ""))
    if not key:
        raise ApiError(401, ErrorCode.UNAUTHORIZED, "missing X-API-Key header (or Authorization: Bearer)")
    if not key.isascii():  # non-UTF-8 bytes arrive as surrogates: no key has them
        raise ApiError(401, ErrorCode.UNAUTHORIZED, "invalid API key")
    admin_key = request.app[SETTINGS].api_key
    if admin_key and hmac.compare_digest(key.encode(), admin_key.encode()):
        request[PRINCIPAL] = Principal(True, None)
        return await handler(request)
    agent_id = await request.app[COMMANDS].agent_for_api_key(key)
    if agent_id is None:
        raise ApiError(401, ErrorCode.UNAUTHORIZED, "invalid API key")
    request[PRINCIPAL] = Principal(False, agent_id)
    return await handler(request)


def _bearer(header: str) -> str:
    """The key of an `Authorization: Bearer <key>` header (what Prometheus scrapers send), or ''."""
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def principal(request: web.Request) -> Principal:
    return request[PRINCIPAL]


def require_admin(request: web.Request) -> None:
    if not principal(request).is_admin:
        raise ApiError(403, ErrorCode.ADMIN_REQUIRED, "this endpoint needs the admin API key")
