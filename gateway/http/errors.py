"""The one JSON error shape `{"error": {"code", "message", "details"}}` and the error middleware."""

from __future__ import annotations

from typing import Any

import orjson
import structlog
from aiohttp import web

from commands.error_codes import ErrorCode
from commands.errors import (
    CommandError, Conflict, Forbidden, IdempotencyKeyReused, InvalidCommand, NotFound, TooLarge, Unprocessable,
)
from events.errors import LogResetError, OutcomeUnknown
from events.redis.client import UNAVAILABLE_ERRORS
from gateway.http.appkeys import SETTINGS
from projections.core.errors import InvalidQuery

log = structlog.get_logger(__name__)

_UNAVAILABLE: tuple[type[BaseException], ...] = (*UNAVAILABLE_ERRORS, ConnectionRefusedError)


class ApiError(Exception):
    """An HTTP-level failure raised by the gateway itself (auth, JSON, lag)."""

    def __init__(self, status: int, code: ErrorCode, message: str, details: dict[str, Any] | None = None, *,
                 close: bool = False, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details or {}
        self.close = close  # the connection cannot carry another request (e.g. a body that failed to decode)
        self.headers = headers or {}  # e.g. Retry-After


def error_body(code: ErrorCode, message: str, details: dict[str, Any] | None = None) -> dict:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def error_response(status: int, code: ErrorCode, message: str, details: dict[str, Any] | None = None) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(error_body(code, message, details)) + b"\n",
                        content_type="application/json")


_STATUS_BY_ERROR: list[tuple[type, int]] = [
    (InvalidCommand, 400), (Forbidden, 403), (NotFound, 404), (Conflict, 409), (IdempotencyKeyReused, 422),
    (Unprocessable, 422), (TooLarge, 413),
]

_HTTP_CODES = {400: ErrorCode.BAD_REQUEST, 401: ErrorCode.UNAUTHORIZED, 403: ErrorCode.FORBIDDEN,
               404: ErrorCode.NOT_FOUND, 405: ErrorCode.METHOD_NOT_ALLOWED, 413: ErrorCode.PAYLOAD_TOO_LARGE,
               415: ErrorCode.UNSUPPORTED_MEDIA_TYPE}


def _command_status(exc: CommandError) -> int:
    for cls, status in _STATUS_BY_ERROR:
        if isinstance(exc, cls):
            return status
    return 400


@web.middleware
async def error_middleware(request: web.Request, handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as exc:
        resp = error_response(exc.status, exc.code, exc.message, exc.details)
        resp.headers.update(exc.headers)
        if exc.close:
            resp.force_close()
        return resp
    except CommandError as exc:
        return error_response(_command_status(exc), exc.code, exc.message, exc.details)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        code = _HTTP_CODES.get(exc.status, ErrorCode.HTTP_ERROR)
        message = exc.reason if exc.status != 413 else "request body is too large"
        details = {"max_bytes": request.app[SETTINGS].max_body_bytes} if exc.status == 413 else {}
        resp = error_response(exc.status, code, message, details)
        if exc.status == 405 and "Allow" in exc.headers:
            resp.headers["Allow"] = exc.headers["Allow"]
        return resp
    except InvalidQuery as exc:
        return error_response(400, ErrorCode.INVALID_REQUEST, str(exc))
    except LogResetError as exc:
        log.error("log.reset", error=str(exc))
        return error_response(503, ErrorCode.LOG_RESET, str(exc))
    except OutcomeUnknown as exc:  # sent, unconfirmed: never a 500 for a write that may have landed
        log.error("append.outcome_unknown", path=request.path, error=str(exc))
        return error_response(503, ErrorCode.OUTCOME_UNKNOWN, str(exc),
                              {"retry": "with the same Idempotency-Key"})
    except _UNAVAILABLE as exc:
        log.error("redis.unavailable", error=str(exc))
        return error_response(503, ErrorCode.UNAVAILABLE, "the event log (Redis) is unreachable")
    except Exception:  # noqa: BLE001 - the one place that turns surprises into a 500
        log.exception("request.failed", path=request.path, method=request.method)
        return error_response(500, ErrorCode.INTERNAL_ERROR, "internal server error")
