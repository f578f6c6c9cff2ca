"""Tombstones (admin): GET /api/v1/admin/tombstones — what forget runs evicted, newest first."""

from __future__ import annotations

from aiohttp import web

from commands.error_codes import ErrorCode
from commands.parsing import MEMORY_ID_RE, NAMESPACE_RE
from gateway.http.appkeys import STORE, TOMBSTONES
from gateway.http.auth import require_admin
from gateway.http.errors import ApiError
from gateway.http.requests import after_param, json_response, query_int, wait_for_projections
from projections.tombstones.reader import MAX_LIMIT, REASONS

DEFAULT_LIMIT = 100
MAX_OFFSET = 10_000_000


def _invalid(field: str, message: str) -> ApiError:
    return ApiError(400, ErrorCode.INVALID_REQUEST, f"{field}: {message}", {"field": field})


def _text(request: web.Request, field: str, pattern) -> str | None:
    value = request.query.get(field)
    if value is None:
        return None
    if not pattern.fullmatch(value):
        raise _invalid(field, "has an invalid format")
    return value


def _params(request: web.Request) -> dict:
    reason = request.query.get("reason")
    if reason is not None and reason not in REASONS:
        raise ApiError(400, ErrorCode.INVALID_REQUEST, f"reason: must be one of {', '.join(REASONS)}",
                       {"field": "reason", "allowed": list(REASONS)})
    return {"namespace": _text(request, "namespace", NAMESPACE_RE),
            "original_id": _text(request, "memory_id", MEMORY_ID_RE), "reason": reason,
            "limit": query_int(request, "limit", default=DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT),
            "offset": query_int(request, "offset", default=0, minimum=0, maximum=MAX_OFFSET)}


async def listing(request: web.Request) -> web.Response:
    require_admin(request)
    params = _params(request)
    tombstones = request.app[TOMBSTONES]
    await wait_for_projections(request, after_param(request), tombstones.reads)
    rows, total = await tombstones.page(**params)
    return json_response({"tombstones": rows, "count": total,
                          "position": await request.app[STORE].checkpoint("tombstones")})


def routes() -> list[web.RouteDef]:
    return [web.get("/api/v1/admin/tombstones", listing)]
