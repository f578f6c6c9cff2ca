"""Creating the Redis client with the protocol pinned (callers inject the URL), and what counts as
a transient Redis failure for the background loops."""

from __future__ import annotations

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ReadOnlyError, TryAgainError
from redis.exceptions import TimeoutError as RedisTimeoutError

from events.errors import OutcomeUnknown

TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    RedisConnectionError,     # refused, reset, closed; BusyLoadingError (the server loads its AOF) is one too
    RedisTimeoutError, TryAgainError, ReadOnlyError,   # a replica promoted late, a busy cluster slot
    ConnectionError, TimeoutError,                     # the same from the socket layer
    OutcomeUnknown,           # an append whose answer was lost: retried with the same idempotency key
)
"""Errors a background loop retries (with back-off up to `RETRY_BACKOFF_MAX_S`) instead of dying."""

RETRY_BACKOFF_MAX_S = 2.0
"""The longest wait between two retries, so every loop resumes within seconds of Redis returning."""


def connect(url: str, *, max_connections: int = 64) -> Redis:
    return Redis.from_url(url, decode_responses=False, protocol=2, max_connections=max_connections,
                          health_check_interval=30)
