"""The client's exceptions, built from the server's one error shape
`{"error": {"code", "message", "details"}}` (README, "Error codes").

The class is chosen by the error code when it names a more precise case (`version_conflict`,
`projection_lag`, `outcome_unknown`, ...), else by the HTTP status; `.code` always keeps the
server's code, so new codes need no new class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ZhiyiError(Exception):
    """Any failure of a zhiyi call. `status` is the HTTP status (None when no answer came)."""

    def __init__(self, status: int | None, code: str, message: str,
                 details: Mapping[str, Any] | None = None, *, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(f"{status or 'no answer'} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        self.headers: dict[str, str] = dict(headers or {})


class ConnectionFailed(ZhiyiError):
    """No HTTP answer: the connection failed, was dropped or timed out. `sent` says whether the
    request may have reached the server (a write without an idempotency key may then have landed)."""

    def __init__(self, message: str, *, sent: bool) -> None:
        super().__init__(None, "connection_failed", message, {"sent": sent})
        self.sent = sent


class BadRequest(ZhiyiError):
    """400: invalid JSON, field or parameter (`details.field` names it)."""


class Unauthorized(ZhiyiError):
    """401: `X-API-Key` missing or not a key."""


class Forbidden(ZhiyiError):
    """403: not allowed for this key (another agent's namespace, an admin route)."""


class NotFound(ZhiyiError):
    """404: unknown memory, agent, node, episode, skill or route."""


class Conflict(ZhiyiError):
    """409: the request conflicts with the current state."""


class VersionConflict(Conflict):
    """409 `version_conflict`: `expected_version` is stale or the memory is deleted."""

    @property
    def current_version(self) -> int | None:
        value = self.details.get("current_version")
        return value if isinstance(value, int) else None


class PayloadTooLarge(ZhiyiError):
    """413: the body (or an episode) is too large."""


class Unprocessable(ZhiyiError):
    """422: well-formed but meaningless now (e.g. `after` beyond the end of the log)."""


class IdempotencyKeyReused(Unprocessable):
    """422 `idempotency_key_reused`: the key was used with another body or route."""


class RateLimited(ZhiyiError):
    """429: retry after `retry_after` seconds (the `Retry-After` header; None when absent)."""

    @property
    def retry_after(self) -> float | None:
        return retry_after_seconds(self.headers)


class ServerError(ZhiyiError):
    """500 or another 5xx the client does not retry: a bug on the server."""


class Unavailable(ZhiyiError):
    """502/503: the server (or its Redis, or a LAN replica's primary) cannot serve now.
    `retry_after` is the `Retry-After` header when the server sent one."""

    @property
    def retry_after(self) -> float | None:
        return retry_after_seconds(self.headers)


class OutcomeUnknown(Unavailable):
    """503 `outcome_unknown`: the write may or may not be in the log; retry with the same key."""


class ProjectionLag(ZhiyiError):
    """504 `projection_lag`: the projections did not reach `after` in time (or a gateway timeout)."""


_BY_CODE: dict[str, type[ZhiyiError]] = {
    "version_conflict": VersionConflict,
    "idempotency_key_reused": IdempotencyKeyReused,
    "outcome_unknown": OutcomeUnknown,
    "projection_lag": ProjectionLag,
}

_BY_STATUS: dict[int, type[ZhiyiError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict, 413: PayloadTooLarge,
    422: Unprocessable, 429: RateLimited, 502: Unavailable, 503: Unavailable, 504: ProjectionLag,
}


def error_class(status: int, code: str) -> type[ZhiyiError]:
    """The exception class for an error answer."""
    if code in _BY_CODE:
        return _BY_CODE[code]
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return ServerError if status >= 500 else ZhiyiError


def error_from_response(status: int, payload: object, headers: Mapping[str, str] | None = None) -> ZhiyiError:
    """The exception for an HTTP error answer: its JSON error shape, or (from a proxy in between,
    say) whatever it was, with code `http_error`."""
    error = payload.get("error") if isinstance(payload, Mapping) else None
    if isinstance(error, Mapping) and isinstance(error.get("code"), str):
        code = str(error["code"])
        message = str(error.get("message", ""))
        details = error.get("details")
        details = details if isinstance(details, Mapping) else {}
    else:
        code = "http_error"
        message = (payload if isinstance(payload, str) else repr(payload))[:500] or f"HTTP {status}"
        details = {}
    return error_class(status, code)(status, code, message, details, headers=headers)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """`Retry-After` in seconds (the delta-seconds form the server sends), None if absent or unreadable."""
    for name, value in headers.items():
        if name.lower() == "retry-after":
            try:
                return max(0.0, float(value))
            except ValueError:
                return None
    return None
