"""CORS (seed 7.1): browsers on the origins `ZHIYI_CORS_ORIGINS` names (a comma-separated list, or `*`)
may call the API. Unset: no CORS headers at all (a browser on another origin is refused by itself).

The middleware is the outermost: a preflight (`OPTIONS` with `Origin` and
`Access-Control-Request-Method`) from an allowed origin is answered 204 here, before authentication
(browsers send no key with it); one from another origin gets 403 in the one error shape. Every answer
to an allowed origin — errors too — carries `Access-Control-Allow-Origin` and exposes the rate-limit
and retry headers. Keys travel in headers (`X-API-Key` or `Authorization`), never cookies: no
credentials mode."""

from __future__ import annotations

from aiohttp import web

from commands.error_codes import ErrorCode
from gateway.http.appkeys import SETTINGS
from gateway.http.errors import error_response

ALLOW_METHODS = "GET, POST, DELETE, OPTIONS"
ALLOW_HEADERS = "Content-Type, Content-Encoding, X-API-Key, Authorization, Idempotency-Key, X-Zhiyi-After"
EXPOSE_HEADERS = "Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset"
MAX_AGE_S = "600"


def _allowed(origin: str, allowed: tuple[str, ...]) -> str | None:
    if "*" in allowed:
        return "*"
    return origin if origin in allowed else None


@web.middleware
async def cors_middleware(request: web.Request, handler) -> web.StreamResponse:
    allowed = request.app[SETTINGS].cors_origins
    origin = request.headers.get("Origin")
    if not allowed or origin is None:
        return await handler(request)
    allow = _allowed(origin, allowed)
    if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
        if allow is None:
            return error_response(403, ErrorCode.FORBIDDEN, f"origin {origin} may not call this API (CORS)",
                                  {"origin": origin})
        return web.Response(status=204, headers={
            "Access-Control-Allow-Origin": allow, "Access-Control-Allow-Methods": ALLOW_METHODS,
            "Access-Control-Allow-Headers": ALLOW_HEADERS, "Access-Control-Max-Age": MAX_AGE_S, "Vary": "Origin"})
    response = await handler(request)
    if allow is not None:
        response.headers["Access-Control-Allow-Origin"] = allow
        response.headers["Access-Control-Expose-Headers"] = EXPOSE_HEADERS
        response.headers["Vary"] = "Origin"
    return response
