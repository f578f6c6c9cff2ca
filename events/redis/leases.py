"""Leases: one instance at a time runs a piece of periodic work (the triggers), whichever gateways
evaluate it. A lease is a Redis string `SET NX PX` holding the owner's token; only its owner releases
it (compare-and-delete), and a crashed owner's lease expires after its TTL."""

from __future__ import annotations

import uuid
from contextlib import asynccontextmanager
from typing import AsyncIterator

from redis.asyncio import Redis

from events.redis import keys

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


@asynccontextmanager
async def lease(redis: Redis, name: str, ttl_ms: int) -> AsyncIterator[bool]:
    """Hold the lease `name` for the block (True), or not (False: another instance holds it)."""
    key, token = keys.lease(name), uuid.uuid4().hex
    held = bool(await redis.set(key, token, nx=True, px=ttl_ms))
    try:
        yield held
    finally:
        if held:
            await redis.eval(_RELEASE, 1, key, token)
