"""The reactions runner: policies over the log through a Redis consumer group.

- Workers share the group `zhiyi:events` / :data:`events.redis.keys.REACTIONS_GROUP` (created at the
  start of the log, so a new deployment also reacts to what was committed before it ran); each
  event is delivered to one worker (`XREADGROUP`).
- For each event, every policy that wants it waits until the projections it reads have reached
  the event, decides its follow-up events, and appends them with the idempotency key
  ``reaction:<cause position>:<policy>`` — so a redelivered event never emits its follow-ups
  twice (the second append is answered as a duplicate). Only when every policy is done is the
  event acknowledged (`XACK`): a worker that dies mid-batch leaves its events pending.
- Pending events idle for longer than `claim_idle_ms` (their worker died or is stuck) are
  claimed by another worker (`XPENDING` + `XCLAIM`); one delivered more than `max_deliveries`
  times goes to the dead-letter stream :data:`events.redis.keys.REACTIONS_DEAD` and is acknowledged.
- A worker restarting under the same consumer name first re-handles its own pending events.
- Transient Redis errors (`events.redis.client.TRANSIENT_ERRORS`), at start too, are logged and
  retried with back-off (up to 2 s), re-handling this consumer's unacknowledged events first; the
  loop does not crash.

The Redis commands themselves are :class:`events.redis.consumer_groups.ConsumerGroup`'s; this
module is the policy over them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import structlog

from commands.reactions.policy import Policy
from events.envelope import Event
from events.redis import keys
from events.redis.client import RETRY_BACKOFF_MAX_S, TRANSIENT_ERRORS
from events.redis.consumer_groups import ConsumerGroup, Delivery, group_lost
from events.redis.store import EventStore, Idempotency

log = structlog.get_logger(__name__)

TRANSIENT: tuple[type[BaseException], ...] = TRANSIENT_ERRORS


class ProjectionLag(RuntimeError):
    """A policy's projections did not reach the cause event in time: retried later."""


def reaction_key(cause: str, policy: str) -> str:
    return f"{cause}:{policy}"


@dataclass
class ReactionsRunner:
    store: EventStore
    policies: Sequence[Policy]
    consumer: str
    waiter: Any = None                  # projections.core.waiter.CheckpointWaiter, for policies' `reads`
    group: str = keys.REACTIONS_GROUP
    batch: int = 100
    block_ms: int = 1000
    claim_idle_ms: int = 60_000       # > wait_s: a worker waiting on projections is not presumed dead
    max_deliveries: int = 5
    wait_s: float = 30.0
    handled: int = field(default=0, init=False)
    _group_ready: bool = field(default=False, init=False)

    @property
    def consumer_group(self) -> ConsumerGroup:
        return ConsumerGroup(self.store.redis, self.group, self.consumer)

    async def ensure_group(self) -> None:
        if self._group_ready:
            return
        if await self.consumer_group.create():
            log.info("reactions.group_created", group=self.group)
        self._group_ready = True

    # ------------------------------------------------------------------ loop

    async def run(self, stop: asyncio.Event) -> None:
        own_pending = True   # first, and after a failure: the events this consumer was given and did not ack
        delay = 0.1
        while not stop.is_set():
            try:
                await self.step(own_pending=own_pending)
                own_pending = False
                delay = 0.1
            except TRANSIENT as exc:   # Redis away (also at start): retried, never fatal
                log.warning("reactions.redis_error", error=str(exc), retry_in_s=delay)
                own_pending = True
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_BACKOFF_MAX_S)
            except Exception as exc:  # noqa: BLE001 - a surprise is logged and retried: the loop never dies
                if group_lost(exc):
                    # the stream (and its group) was deleted: a wiped log (see events.redis.keys.EPOCH); the group is
                    # created again, so the reactions go on with the log rebuilt by `zhiyi replay --in-place`
                    log.error("reactions.group_lost", error=str(exc), retry_in_s=delay)
                    self._group_ready = False
                else:
                    log.exception("reactions.step_failed", retry_in_s=delay)
                own_pending = True
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_BACKOFF_MAX_S)

    async def step(self, *, own_pending: bool = False) -> int:
        """Claim stale events of dead workers, then read (and handle) one batch; returns events handled."""
        await self.ensure_group()
        n = await self._claim_stale()
        got = await self.consumer_group.read(count=self.batch, block_ms=self.block_ms, own_pending=own_pending)
        if got:
            n += await self._handle_deliveries(got)
        return n

    async def drain(self, *, max_steps: int = 1000) -> int:
        """Handle everything pending or new until a step finds nothing (tests, `zhiyi tick`)."""
        await self.ensure_group()
        total = await self.step(own_pending=True)
        for _ in range(max_steps):
            saved, self.block_ms = self.block_ms, 1
            try:
                n = await self.step()
            finally:
                self.block_ms = saved
            total += n
            if n == 0:
                break
        return total

    # ------------------------------------------------------------------ claiming

    async def _claim_stale(self) -> int:
        group = self.consumer_group
        pending = await group.pending(idle_ms=self.claim_idle_ms, count=self.batch)
        if not pending:
            return 0
        claim = []
        for p in pending:
            if p.deliveries >= self.max_deliveries:
                await self._dead_letter(p.position, "", f"delivered {p.deliveries} times without success",
                                        p.deliveries)
            else:
                claim.append(p.position)
        if not claim:
            return 0
        got = await group.claim(claim, idle_ms=self.claim_idle_ms)
        log.info("reactions.claimed", consumer=self.consumer, events=len(got))
        return await self._handle_deliveries(got)

    async def _dead_letter(self, pos: str, policy: str, error: str, deliveries: int) -> None:
        await self.consumer_group.dead_letter(pos, policy, error, deliveries)
        log.error("reactions.dead_letter", position=pos, policy=policy, error=error[:200])

    # ------------------------------------------------------------------ handling

    async def _handle_deliveries(self, items: list[Delivery]) -> int:
        group = self.consumer_group
        n = 0
        for item in items:
            pos, event = item.position, item.event
            if item.missing:  # not in the log any more (the product never trims it)
                await group.ack(pos)
                continue
            if event is None:  # an undecodable event can never succeed
                await self._dead_letter(pos, "", f"undecodable: {item.error}", 1)
                continue
            try:
                await self.handle(event)
            except TRANSIENT:
                raise
            except Exception:  # noqa: BLE001 - left pending: retried, then dead-lettered
                log.exception("reactions.failed", position=pos, type=event.type)
                continue
            await group.ack(pos)
            n += 1
            self.handled += 1
        return n

    async def handle(self, event: Event) -> None:
        """Run every interested policy on `event` and append their follow-ups (idempotently)."""
        for policy in self.policies:
            if not policy.wants(event):
                continue
            if policy.reads and self.waiter is not None:
                if not await self.waiter.wait(list(policy.reads), event.position, timeout_s=self.wait_s):
                    raise ProjectionLag(f"{policy.reads} did not reach {event.position} in {self.wait_s} s")
            follow_ups = await policy.decide(event)
            if not follow_ups:
                continue
            follow_ups = [e if e.cause else replace(e, cause=event.position) for e in follow_ups]
            key = reaction_key(event.position, policy.name)
            res = await self.store.append(follow_ups, idempotency=Idempotency("reaction", key, key))
            log.info("reactions.applied", cause=event.position, policy=policy.name, events=len(follow_ups),
                     duplicate=res.duplicate, position=res.position)
