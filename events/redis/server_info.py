"""Probing and stopping a Redis server by its URL, for the process that runs it
(`gateway.process.embedded_redis`): is it answering, can it confirm fsyncs, shut it down.

Synchronous where the caller is (starting and stopping the private server happens outside an event
loop); each call opens its own short-lived client and closes it.
"""

from __future__ import annotations

import redis as sync_redis

from events.redis.append_call import require_durable
from events.redis.client import connect


def reachable(url: str, timeout_s: float = 0.5) -> bool:
    """True when the server at `url` answers PING within `timeout_s` (a server still loading its
    AOF answers LOADING: not reachable yet). An invalid URL is unreachable."""
    try:
        client = sync_redis.Redis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except (sync_redis.RedisError, OSError, ValueError):
        return False


def shutdown(url: str, timeout_s: float = 5.0) -> bool:
    """Ask the server at `url` to SHUTDOWN (flushing its AOF). False when it could not be asked or
    refused (the caller then stops the process another way)."""
    try:
        client = sync_redis.Redis.from_url(url, socket_timeout=timeout_s)
        try:
            client.shutdown()
        finally:
            client.close()
    except (sync_redis.RedisError, OSError):
        return False
    return True


async def check_durable(url: str) -> None:
    """Raise DurabilityUnavailable unless the server at `url` can confirm fsyncs (WAITAOF, AOF on)."""
    client = connect(url)
    try:
        await require_durable(client)
    finally:
        await client.aclose()
