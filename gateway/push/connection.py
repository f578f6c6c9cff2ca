"""One agent's socket: a bounded queue of push messages and the task that writes them in order.

The hub offers every message for the agent; the writer sends them oldest first and remembers the
position of the last one sent. A client that does not read fills the queue (its TCP buffer is full,
so the writer waits): past `PushLimits.queue_messages` messages or `queue_bytes` bytes the queue is
dropped, a `resync` message names the position to resume from (the last one sent) and the socket is
closed with code 4000. If even that cannot be written within `send_timeout_s` the connection is cut.
Nothing per connection grows beyond those bounds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

import orjson
import structlog

from events import positions

log = structlog.get_logger(__name__)

RESYNC_CLOSE_CODE = 4000


@dataclass(frozen=True, slots=True)
class PushLimits:
    queue_messages: int = 1000          # per connection
    queue_bytes: int = 4 * 1024 * 1024  # per connection (a message is its JSON text)
    per_agent: int = 16                 # sockets one agent may hold open on one gateway
    send_timeout_s: float = 5.0         # the resync and the close, on a client that does not read
    catch_up_batch: int = 500           # events read at a time when resuming


def wire(message: dict[str, Any]) -> str:
    return orjson.dumps(message).decode()


class PushConnection:
    def __init__(self, ws: Any, agent_id: str, limits: PushLimits, *, abort: Callable[[], None]) -> None:
        self.ws = ws
        self.agent_id = agent_id
        self.limits = limits
        self.sent = ""                       # position of the last message written (or the resume point)
        self.dropped = 0                     # messages dropped by an overflow
        self.overflowed = False
        self._abort = abort
        self._queue: deque[tuple[str, str]] = deque()
        self._bytes = 0
        self._wake = asyncio.Event()
        self._writer: asyncio.Task | None = None
        self._resync: asyncio.Task | None = None

    @property
    def queued(self) -> int:
        return len(self._queue)

    @property
    def queued_bytes(self) -> int:
        return self._bytes

    def offer(self, position: str, text: str) -> bool:
        """Queue one message (the hub's dispatch: never blocks). Past the bounds: resync and close.
        True when this message made the queue overflow."""
        if self.overflowed:
            self.dropped += 1
            return False
        if len(self._queue) >= self.limits.queue_messages or self._bytes + len(text) > self.limits.queue_bytes:
            self.dropped += len(self._queue) + 1
            self._overflow()
            return True
        self._queue.append((position, text))
        self._bytes += len(text)
        self._wake.set()
        return False

    async def send_now(self, position: str, text: str) -> None:
        """Write one message at once (the resume's catch-up, before the writer starts)."""
        self.sent = position     # an uncompressed frame is in the transport before send_str first awaits
        await self.ws.send_str(text)

    def start_writer(self) -> None:
        """After the catch-up: write the queued and live messages (or resync, if it overflowed meanwhile)."""
        if self.overflowed:
            self._resync = asyncio.create_task(self._send_resync(), name=f"push-resync-{self.agent_id}")
        else:
            self._writer = asyncio.create_task(self._write(), name=f"push-writer-{self.agent_id}")

    async def _write(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                position, text = self._queue.popleft()
                self._bytes -= len(text)
                if positions.key(position) <= positions.key(self.sent):
                    continue          # already sent by the catch-up (the resume point was past the hub's)
                self.sent = position
                await self.ws.send_str(text)

    def _overflow(self) -> None:
        self.overflowed = True
        self._queue.clear()
        self._bytes = 0
        log.warning("push.slow_client", agent=self.agent_id, resume_from=self.sent, dropped=self.dropped)
        if self._writer is not None:     # else the catch-up is still sending: start_writer resyncs after it
            self._resync = asyncio.create_task(self._send_resync(), name=f"push-resync-{self.agent_id}")

    async def _send_resync(self) -> None:
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._writer
        message = {"type": "resync", "position": self.sent,
                   "data": {"reason": "slow consumer: the queue passed its bound; reconnect with after=position",
                            "dropped": self.dropped}}
        try:
            async with asyncio.timeout(self.limits.send_timeout_s):
                await self.ws.send_str(wire(message))
                await self.ws.close(code=RESYNC_CLOSE_CODE, message=b"resync")
        except (asyncio.TimeoutError, ConnectionError, RuntimeError):
            log.warning("push.client_cut", agent=self.agent_id)
            self._abort()

    async def close(self) -> None:
        """Stop writing (the socket is done)."""
        for task in (self._writer, self._resync):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._queue.clear()
        self._bytes = 0
