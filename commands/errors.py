"""Domain errors of the write side. They know nothing about HTTP; the gateway maps them."""

from __future__ import annotations

from typing import Any

from commands.error_codes import ErrorCode


class CommandError(Exception):
    """Root of every error raised by the `commands` package."""

    code: ErrorCode = ErrorCode.INVALID_REQUEST

    def __init__(self, message: str, details: dict[str, Any] | None = None, *,
                 code: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}
        if code:
            self.code = code


class InvalidCommand(CommandError):
    """The request is malformed: wrong type, missing field, out of range, too large."""

    code = ErrorCode.INVALID_REQUEST


class Forbidden(CommandError):
    """The actor may not do this (e.g. write into another agent's namespace)."""

    code = ErrorCode.FORBIDDEN


class NotFound(CommandError):
    code = ErrorCode.NOT_FOUND


class TooLarge(CommandError):
    """A request part exceeds a size limit that is not a field's own (e.g. an episode over 256 KB)."""

    code = ErrorCode.PAYLOAD_TOO_LARGE


class Conflict(CommandError):
    """The state changed or already exists (stale expected_version, agent already registered)."""

    code = ErrorCode.CONFLICT


class Unprocessable(CommandError):
    """Well-formed (the API document allows it) but meaningless: e.g. a synonym group with no new term."""

    code = ErrorCode.UNPROCESSABLE


class IdempotencyKeyReused(CommandError):
    """The same Idempotency-Key was used before with a different request body."""

    code = ErrorCode.IDEMPOTENCY_KEY_REUSED
