"""A server process's instance (seed 4.1): claimed at start — refused while another live process
holds the same (instance id, role) — then a heartbeat every 10 s until it stops, when it is released
(`events.redis.instances`)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Awaitable, Callable

import structlog

from events.redis.client import TRANSIENT_ERRORS
from events.redis.instances import Instances

log = structlog.get_logger(__name__)

BEAT_EVERY_S = 10.0


class InstanceTaken(RuntimeError):
    """Another live process holds this (instance id, role)."""

    def __init__(self, instance_id: str, role: str, holder: dict[str, Any]) -> None:
        super().__init__(f"another live {role} process holds instance id {instance_id!r} ({holder.get('info') or '-'}); "
                         "stop it, or give this one another id (ZHIYI_INSTANCE_ID or another --data-dir)")


def zhiyi_version() -> str:
    try:
        return version("zhiyi")
    except PackageNotFoundError:
        return "unknown"


async def claim(instances: Instances, instance_id: str, role: str, info: str = "", epoch: str = "",
                every_s: float = BEAT_EVERY_S) -> None:
    """Claim (instance_id, role) for this process. A heartbeat already there is watched for one beat
    interval: refreshed, its process lives and this one is refused (InstanceTaken); not refreshed, it
    is a dead process's (a crash, then a restart within 30 s) and is taken over."""
    holder = await instances.claim(instance_id, role, info, epoch)
    if holder is None:
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + every_s + 2
    ttl, seen = await instances.ttl_ms(instance_id, role), loop.time()
    margin_ms = max(50.0, min(1000.0, every_s * 500))   # a beat adds about every_s; latency jitter is less
    while loop.time() < deadline:
        await asyncio.sleep(0.25)
        holder = await instances.claim(instance_id, role, info, epoch)
        if holder is None:
            return
        now_ttl, now = await instances.ttl_ms(instance_id, role), loop.time()
        if now_ttl > ttl - (now - seen) * 1000 + margin_ms:   # it did not just run down: a live process beat
            raise InstanceTaken(instance_id, role, holder)
        ttl, seen = now_ttl, now
    log.warning("instance.taken_over", instance_id=instance_id, role=role, holder=holder.get("info"))
    await instances.take_over(instance_id, role, info, epoch)


async def beat_until(stop: asyncio.Event, instances: Instances, instance_id: str, role: str,
                     record: Callable[[], Awaitable[dict[str, Any]]], info: Callable[[], str] = lambda: "",
                     epoch: Callable[[], str] = lambda: "", every_s: float = BEAT_EVERY_S) -> None:
    """Beat every `every_s` until `stop`; then release. Redis being away is logged, never fatal."""
    try:
        while not stop.is_set():
            try:
                await instances.beat(instance_id, role, {"version": zhiyi_version(), **await record()},
                                     now_ms=int(time.time() * 1000), info=info(), epoch=epoch())
            except TRANSIENT_ERRORS as exc:
                log.warning("instance.heartbeat_failed", role=role, error=f"{type(exc).__name__}: {exc}")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), every_s)
    finally:
        with contextlib.suppress(Exception):
            await instances.release(instance_id, role)
