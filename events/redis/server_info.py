"""Probing and stopping a Redis server by its URL, for the process that runs it
(`gateway.process.embedded_redis`): is it answering, can it confirm fsyncs, shut it down.

Synchronous where the caller is (starting and stopping the private server happens outside an event
loop); each call opens its own short-lived client and closes it.
"""

from __future__ import annotations

import socket
from typing import Any

import redis as sync_redis
from redis.asyncio import Redis

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


def answers(url: str, timeout_s: float = 0.5) -> bool:
    """True when a server runs at `url`, even one still loading its data or syncing from its master
    (a replica's first sync: LOADING / MASTERDOWN errors are answers)."""
    try:
        client = sync_redis.Redis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
        try:
            client.ping()
        finally:
            client.close()
    except sync_redis.BusyLoadingError:
        return True
    except sync_redis.ResponseError as exc:
        return str(exc).startswith("MASTERDOWN")
    except (sync_redis.RedisError, OSError, ValueError):
        return False
    return True


def replicates(url: str, host: str, port: int, timeout_s: float = 2.0) -> tuple[bool, str]:
    """Whether the server at `url` is a replica of `host:port` (ROLE), and what it says it is."""
    client = sync_redis.Redis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
    try:
        role: Any = client.role()
    finally:
        client.close()
    kind = _text(role[0])
    if kind != "slave":
        return False, kind
    master = f"{_text(role[1])}:{int(role[2])}"
    same = int(role[2]) == port and (_text(role[1]) == host or _same_host(_text(role[1]), host))
    return same, f"replica of {master}"


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _same_host(a: str, b: str) -> bool:
    try:
        return socket.gethostbyname(a) == socket.gethostbyname(b)
    except OSError:
        return False


async def replication(redis: Redis) -> dict[str, str]:
    """INFO replication of a server, as text fields (role, master_link_status, master_sync_in_progress,
    master_last_io_seconds_ago, ...)."""
    info = await redis.info("replication")
    return {str(k): _text(v) for k, v in info.items()}
