"""X-API-Key authentication (or `Authorization: Bearer <key>`; on the push socket also `?api_key=`): the admin key (constant-time compare)
or an agent key (sha256 index); under `/api/v1/replicas/{instance_id}/` only that LAN replica's key."""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from aiohttp import web

from commands.error_codes import ErrorCode
from commands.parsing import AGENT_ID_RE
from gateway.http.appkeys import COMMANDS, REPLICA, REPLICA_OPS, SETTINGS
from gateway.http.epoch_guard import KEYS_VERSION
from gateway.http.errors import ApiError

PUBLIC_PATHS = frozenset({"/health", "/api/v1/openapi.json"})
REPLICA_PREFIX = "/api/v1/replicas/"
QUERY_KEY_PREFIX = "/api/v1/ws/"     # the only routes that take the key as `?api_key=` too


@dataclass(frozen=True, slots=True)
class Principal:
    is_admin: bool
    agent_id: str | None  # the agent whose key was used (None for the admin key)
    replica_id: str | None = None  # a LAN replica's key (only its own /api/v1/replicas/{id}/ routes)


PRINCIPAL = web.RequestKey("principal", Principal)


@web.middleware
async def auth_middleware(request: web.Request, handler) -> web.StreamResponse:
    if request.path in PUBLIC_PATHS or request.method == "OPTIONS":
        return await handler(request)
    request[PRINCIPAL] = await authenticate(request)
    return await handler(request)


async def authenticate(request: web.Request) -> Principal:
    """Who the request's key is: 401 without a key or with one nobody holds."""
    key = request.headers.get("X-API-Key") or _bearer(request.headers.get("Authorization", ""))
    if not key and request.path.startswith(QUERY_KEY_PREFIX):   # browsers cannot set a socket's headers
        key = request.query.get("api_key", "")
    if not key:
        raise ApiError(401, ErrorCode.UNAUTHORIZED, "missing X-API-Key header (or Authorization: Bearer)")
    if not key.isascii():  # non-UTF-8 bytes arrive as surrogates: no key has them
        raise ApiError(401, ErrorCode.UNAUTHORIZED, "invalid API key")
    if request.path.startswith(REPLICA_PREFIX):
        instance_id = request.match_info.get("instance_id", "")
        if not instance_id or not await request.app[REPLICA_OPS].key_matches(instance_id, key):
            raise ApiError(401, ErrorCode.UNAUTHORIZED,
                           "invalid replica key: this route takes the key issued for this replica "
                           "(POST /api/v1/admin/replicas)")
        return Principal(False, None, instance_id)
    admin_key = request.app[SETTINGS].api_key
    if admin_key and hmac.compare_digest(key.encode(), admin_key.encode()):
        return Principal(True, None)
    replica = request.app.get(REPLICA)
    if replica is not None and (down := await replica.link_status.down_for_s()) > replica.auth_grace_s:
        raise ApiError(503, ErrorCode.UNAVAILABLE,
                       f"this replica has been cut off from its primary for {down:.0f} s (more than "
                       f"{replica.auth_grace_s:g} s): agent keys cannot be checked here, a key may have been "
                       "rotated or revoked meanwhile; use the primary", {"link_down_s": round(down, 1)})
    agent_id = await request.app[COMMANDS].agent_for_api_key(key, request.get(KEYS_VERSION))
    if agent_id is None:
        raise ApiError(401, ErrorCode.UNAUTHORIZED, "invalid API key")
    return Principal(False, agent_id)


def _bearer(header: str) -> str:
    """The key of an `Authorization: Bearer <key>` header (what Prometheus scrapers send), or ''."""
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def principal(request: web.Request) -> Principal:
    return request[PRINCIPAL]


def require_admin(request: web.Request) -> None:
    if not principal(request).is_admin:
        raise ApiError(403, ErrorCode.ADMIN_REQUIRED, "this endpoint needs the admin API key")


def own_or_admin(request: web.Request, may: str) -> tuple[str, str]:
    """(the agent named in the path, "admin" or ""): the admin key, or that agent's own key; else 403
    "only the admin key or the agent's own key may <may>"."""
    agent_id = request.match_info["agent_id"]
    if not AGENT_ID_RE.fullmatch(agent_id):
        raise ApiError(400, ErrorCode.INVALID_REQUEST, "agent_id: has an invalid format", {"field": "agent_id"})
    who = principal(request)
    if not who.is_admin and who.agent_id != agent_id:
        raise ApiError(403, ErrorCode.FORBIDDEN, f"only the admin key or the agent's own key may {may}",
                       {"agent_id": agent_id})
    return agent_id, "admin" if who.is_admin else ""
