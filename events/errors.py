"""Errors of the event log. Domain-level: they know nothing about HTTP."""

from __future__ import annotations


class EventLogError(Exception):
    """Root of every error raised by the `events` package."""


class UnknownEventType(EventLogError):
    """An event type that is not registered in the catalogue was asked for by name."""


class DecodeError(EventLogError):
    """A stored event could not be decoded."""


class IdempotencyConflict(EventLogError):
    """The same idempotency key was used before with a different request body."""


class GuardFailed(EventLogError):
    """An append precondition (expected version, absent key) did not hold.

    `index` is the position of the failed guard in the list that was passed,
    `actual` the value found (None when the key/field is absent).
    """

    def __init__(self, index: int, actual: str | None) -> None:
        super().__init__(f"append guard {index} failed (actual={actual!r})")
        self.index = index
        self.actual = actual


class LogResetError(EventLogError):
    """The log was lost or replaced: its epoch is missing or not the one expected (by an append,
    or by projections folded from another log), or a checkpoint's event is not in it."""


class OutcomeUnknown(EventLogError):
    """An append was sent but its outcome is unknown: the connection dropped before the answer, or
    (durable mode) the AOF fsync was not confirmed. The events may or may not be (durably) in the
    log; retrying with the same idempotency key is safe."""


class DurabilityUnavailable(EventLogError):
    """Durable mode was asked for but the Redis server cannot confirm fsyncs (no WAITAOF, AOF off)."""
