"""A LAN replica's link to its primary: the loop that sends the buffered feedback votes (the outbox)
and the replica's heartbeat to `POST /api/v1/replicas/{instance_id}/ops`.

- Buffered votes go oldest first, up to `batch` per request, as soon as they are buffered (`wake`)
  and while the primary answers; each is marked done once the primary answered it (applied,
  duplicate, or rejected — a rejected one is logged and not retried: e.g. its memory was deleted
  while the replica was cut off).
- The heartbeat (`status()`: the position the replica's reads reach, its lag, its URL) goes with
  every request, at least every `beat_every_s`: the primary lists the replica in
  `GET /api/v1/instances` (role `replica`) and marks it down 30 s after the last one.
- A primary that cannot be reached is retried with a back-off (0.2 s doubling to `backoff_max_s`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import structlog

from replicas.outbox import Outbox
from replicas.primary_client import PrimaryClient

log = structlog.get_logger(__name__)

BEAT_EVERY_S = 10.0


@dataclass
class ReplicaLink:
    client: PrimaryClient
    outbox: Outbox
    status: Callable[[], Awaitable[dict[str, Any]]]
    beat_every_s: float = BEAT_EVERY_S
    batch: int = 100
    backoff_max_s: float = 2.0
    sent: int = 0                    # operations the primary answered (applied or duplicate)
    rejected: int = 0
    _wake: asyncio.Event = field(default_factory=asyncio.Event, init=False, repr=False)

    def wake(self) -> None:
        """A vote was buffered: send it now."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        delay, last_beat = 0.0, 0.0
        while not stop.is_set():
            self._wake.clear()      # before reading the outbox: a vote buffered from now on wakes the pause
            due_beat = time.monotonic() - last_beat >= self.beat_every_s
            pending = await asyncio.to_thread(self.outbox.pending, self.batch)
            if pending or due_beat:
                try:
                    await self.send(pending)
                    last_beat, delay = time.monotonic(), 0.0
                    if len(pending) == self.batch:
                        continue        # more waiting: no pause
                except Exception as exc:  # noqa: BLE001 - the link retries; reads never depend on it
                    delay = min(max(delay * 2, 0.2), self.backoff_max_s)
                    log.warning("replica.push_failed", error=f"{type(exc).__name__}: {exc}", pending=len(pending),
                                retry_in_s=delay)
            wait = delay or max(0.05, self.beat_every_s - (time.monotonic() - last_beat))
            await self._pause(stop, wait, wakeable=not delay)

    async def _pause(self, stop: asyncio.Event, seconds: float, *, wakeable: bool) -> None:
        """Up to `seconds`, until `stop` (or, when `wakeable`, a newly buffered vote)."""
        waits = [asyncio.ensure_future(stop.wait())]
        if wakeable:
            waits.append(asyncio.ensure_future(self._wake.wait()))
        try:
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in waits:
                t.cancel()
            await asyncio.gather(*waits, return_exceptions=True)

    async def send(self, ops: list[dict[str, Any]]) -> None:
        """One request: `ops` and the heartbeat; the answered operations are marked done."""
        answer = await self.client.push(ops, await self.status())
        outcomes = {}
        for result in answer.get("results", []):
            outcomes[result["op_id"]] = result["status"]
            if result["status"] == "rejected":
                self.rejected += 1
                log.error("replica.op_rejected", op_id=result["op_id"], error=result.get("error"))
            else:
                self.sent += 1
        if outcomes:
            await asyncio.to_thread(self.outbox.done, outcomes, int(time.time() * 1000))
