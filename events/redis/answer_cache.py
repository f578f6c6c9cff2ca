"""A small string cache in Redis with a TTL (search results). Values are opaque bytes."""

from __future__ import annotations

from typing import cast

from redis.asyncio import Redis

from events.redis import keys


class RecallCache:
    def __init__(self, redis: Redis, ttl_s: int) -> None:
        self.redis = redis
        self.ttl_s = ttl_s
        self.hits = 0      # this process's lookups, for /metrics
        self.misses = 0

    @property
    def enabled(self) -> bool:
        return self.ttl_s > 0

    async def get(self, digest: str) -> bytes | None:
        if not self.enabled:
            return None
        # bytes: the client does not decode replies (client.connect)
        value = cast("bytes | None", await self.redis.get(keys.recall_cache(digest)))
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    async def put(self, digest: str, value: bytes) -> None:
        if self.enabled:
            await self.redis.set(keys.recall_cache(digest), value, ex=self.ttl_s)
