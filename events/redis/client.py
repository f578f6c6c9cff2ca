"""Creating the Redis client with the protocol pinned (callers inject the URL), and what counts as
a transient Redis failure for the background loops."""

from __future__ import annotations

from redis.asyncio import BlockingConnectionPool
from redis.asyncio import Redis as Redis  # re-exported: the client type, for modules outside events/redis/
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

UNAVAILABLE_ERRORS: tuple[type[BaseException], ...] = (RedisConnectionError, RedisTimeoutError)
"""Errors that mean Redis cannot be reached now (refused, reset, loading, timed out): a request that
meets one is answered "unavailable" (HTTP 503), not as a failure of its own."""

RETRY_BACKOFF_MAX_S = 2.0
"""The longest wait between two retries, so every loop resumes within seconds of Redis returning."""


POOL_WAIT_S = 5.0
"""How long a caller waits for a free pooled connection when all are busy (then: unavailable)."""


def connect(url: str, *, max_connections: int = 64) -> Redis:
    """A client whose pool makes callers wait for a free connection: redis-py's default pool raises
    at once past `max_connections`, which answered a burst of concurrent requests with 503s."""
    pool = BlockingConnectionPool.from_url(url, max_connections=max_connections, timeout=POOL_WAIT_S,
                                           decode_responses=False, protocol=2, health_check_interval=30)
    return Redis.from_pool(pool)  # the client owns the pool: aclose() closes its connections
