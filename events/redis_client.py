"""Creating the Redis client with the protocol pinned (callers inject the URL)."""

from __future__ import annotations

from redis.asyncio import Redis


def connect(url: str, *, max_connections: int = 64) -> Redis:
    return Redis.from_url(url, decode_responses=False, protocol=2, max_connections=max_connections,
                          health_check_interval=30)
