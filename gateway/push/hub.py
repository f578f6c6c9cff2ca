"""The push hub of one gateway: tails the log, routes each batch of events to push messages and
offers them to the connected agents' sockets.

Resume without gaps or repeats: attaching a connection and dispatching a routed batch exclude each
other (one lock), so an attach sees the hub at a batch boundary `P`: every message after `P` will be
offered to the new connection's queue, and the connection first sends, itself, the messages of the
events in (`after`, `P`] read from the log (a catch-up), then starts its writer. Messages are ordered
by position, and the writer skips any it has already sent.

Several gateways: each hub tails the log itself, so an agent may connect to any of them. A hub with no
socket (for IDLE_AFTER_S) reads nothing; the next socket to attach anchors it at the log's end (a
resuming one then reads what it missed from the log, as always).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import structlog

from events import positions
from events.errors import LogResetError
from events.redis.client import RETRY_BACKOFF_MAX_S, TRANSIENT_ERRORS
from gateway.push.connection import PushConnection, PushLimits, wire
from projections.queries.push.router import EVERYONE, PushMessage, PushRouter

log = structlog.get_logger(__name__)

TAIL_BATCH = 500
IDLE_AFTER_S = 30.0


class PushHub:
    def __init__(self, store: Any, router: PushRouter, limits: PushLimits | None = None) -> None:
        self.store = store             # events.redis.store.EventStore
        self.router = router
        self.limits = limits or PushLimits()
        self.position = ""             # the last event dispatched (a batch boundary)
        self.delivered = 0             # messages offered to sockets
        self.overflows = 0             # connections closed with a resync
        self._lock = asyncio.Lock()
        self._by_agent: dict[str, set[PushConnection]] = {}
        self._started = asyncio.Event()
        self._tailing = False          # reading the log (sockets are open, or were IDLE_AFTER_S ago)
        self._wake = asyncio.Event()
        self._last_socket = float("-inf")

    # ------------------------------------------------------------------ connections

    @property
    def tailing(self) -> bool:
        return self._tailing

    def connections(self, agent_id: str | None = None) -> int:
        if agent_id is not None:
            return len(self._by_agent.get(agent_id, ()))
        return sum(len(c) for c in self._by_agent.values())

    def queued_bytes(self) -> int:
        return sum(c.queued_bytes for conns in self._by_agent.values() for c in conns)

    async def attach(self, conn: PushConnection, after: str | None) -> None:
        """Register `conn` and bring it up to date: the messages after `after` (exclusive; none when
        not given: live from now on) are sent before any live one. Returns once the writer runs."""
        await self._started.wait()
        async with self._lock:
            if not self._tailing:          # idle (no socket for a while): live delivery starts at the log's end
                self.position = await self.store.last_position() or positions.ZERO
                self._tailing = True
                self._wake.set()
            self._by_agent.setdefault(conn.agent_id, set()).add(conn)
            upto = self.position
        start = after if after else upto
        conn.sent = start
        await conn.send_now(start, wire({"type": "connected", "position": start,
                                         "data": {"agent_id": conn.agent_id, "resumed": bool(after)}}))
        if after and positions.key(after) < positions.key(upto):
            await self._catch_up(conn, after, upto)
        conn.start_writer()

    async def detach(self, conn: PushConnection) -> None:
        conns = self._by_agent.get(conn.agent_id)
        if conns is not None:
            conns.discard(conn)
            if not conns:
                del self._by_agent[conn.agent_id]
        self._last_socket = time.monotonic()
        await conn.close()

    async def _catch_up(self, conn: PushConnection, after: str, upto: str) -> None:
        async for events in self.store.iterate(after, upto, batch=self.limits.catch_up_batch):
            for m in await self.router.route(events, only=conn.agent_id):
                if conn.overflowed:
                    return
                await conn.send_now(m.position, wire(m.wire()))

    # ------------------------------------------------------------------ the tail

    async def run(self, stopping: asyncio.Event) -> None:
        """Until `stopping` is set: tail the log while sockets are open (and IDLE_AFTER_S after the last
        closes); idle, read nothing (a gateway nobody listens to pays nothing for the hub)."""
        self._started.set()
        delay = route_delay = 0.0      # apart: a read of the log succeeds while its batch fails to route
        while not stopping.is_set():
            if not self._tailing:
                await self._idle(stopping)
                continue
            try:
                events = await self._tail_or_stop(stopping)
                delay = 0.0
            except TRANSIENT_ERRORS as exc:
                delay = min(max(delay * 2, 0.05), RETRY_BACKOFF_MAX_S)
                log.warning("push.tail_failed", error=str(exc), retry_in_s=delay)
                await _sleep_or_stop(stopping, delay)
                continue
            except LogResetError as exc:
                log.error("push.log_reset", error=str(exc))
                await self.close_all(1012, "log reset")
                async with self._lock:
                    self._tailing = False       # the next socket anchors at the new log's end
                continue
            if events:
                try:
                    await self._dispatch_batch(events)
                    route_delay = 0.0
                except Exception as exc:  # noqa: BLE001 - a read model failing: the same batch again, later
                    route_delay = min(max(route_delay * 2, 0.05), RETRY_BACKOFF_MAX_S)
                    log.warning("push.route_failed", error=f"{type(exc).__name__}: {exc}", retry_in_s=route_delay)
                    await _sleep_or_stop(stopping, route_delay)
                    continue
            async with self._lock:
                if not self._by_agent and time.monotonic() - self._last_socket > IDLE_AFTER_S:
                    self._tailing = False

    async def _idle(self, stopping: asyncio.Event) -> None:
        self._wake.clear()
        if self._tailing:
            return
        wake = asyncio.ensure_future(self._wake.wait())
        stop = asyncio.ensure_future(stopping.wait())
        try:
            await asyncio.wait({wake, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            wake.cancel()
            stop.cancel()

    async def _tail_or_stop(self, stopping: asyncio.Event) -> list:
        """The next events (XREAD BLOCK), or none as soon as `stopping` is set (a shutdown does not wait
        for the block to time out)."""
        tail = asyncio.ensure_future(self.store.tail_checked(self.position, self.store.epoch, count=TAIL_BATCH,
                                                             block_ms=1000))
        stop = asyncio.ensure_future(stopping.wait())
        try:
            await asyncio.wait({tail, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if not tail.done():
            tail.cancel()
            with contextlib.suppress(asyncio.CancelledError, *TRANSIENT_ERRORS):
                await tail
            return []
        return tail.result()

    async def _dispatch_batch(self, events: list) -> None:
        async with self._lock:
            if self._by_agent:
                wanted = set(self._by_agent)
                messages = await self.router.route(events, agents=wanted)
                self._offer(messages)
            self.position = events[-1].position

    def _offer(self, messages: list[PushMessage]) -> None:
        for m in messages:
            targets = (c for conns in self._by_agent.values() for c in conns) if m.agent == EVERYONE \
                else iter(self._by_agent.get(m.agent, ()))
            text = None
            for conn in targets:
                text = text or wire(m.wire())
                if conn.offer(m.position, text):
                    self.overflows += 1
                self.delivered += 1

    async def close_all(self, code: int, reason: str) -> None:
        """Close every socket (1001 at shutdown, 1012 when the log was reset); clients reconnect."""
        for conns in list(self._by_agent.values()):
            for conn in list(conns):
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(conn.limits.send_timeout_s):
                        await conn.ws.close(code=code, message=reason.encode())


async def _sleep_or_stop(stopping: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(stopping.wait(), seconds)
