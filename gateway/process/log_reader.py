"""The wiring of a process that only reads the log: a rebuild's second process
(`projections.core.rebuild_process`). Apart from `wiring.py` so the child does not import every
service's module to get one store (about 3 s of start-up)."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator

from events.redis.client import connect
from events.redis.store import EventStore


@asynccontextmanager
async def log_reader(redis_url: str) -> AsyncIterator[EventStore]:
    """A store reading the log at `redis_url`; its connection closed when the block ends."""
    redis = connect(redis_url)
    try:
        yield EventStore(redis, origin="replay")
    finally:
        await redis.aclose()
