"""A consumer group on the stream: the Redis side of the reactions runner (commands.reactions.runner).

One `ConsumerGroup` is one consumer of one group on :data:`events.redis.keys.STREAM`. It creates the
group (XGROUP CREATE at the start of the log), reads deliveries (XREADGROUP: new events, or the ones
given to this consumer and not yet acknowledged), lists and claims the pending events of other
consumers (XPENDING, XCLAIM), acknowledges (XACK) and dead-letters (XADD to
:data:`events.redis.keys.REACTIONS_DEAD`, then XACK). It decides nothing: when to claim, how many
deliveries are too many and what to retry is the runner's policy.

Deliveries come decoded (`events.codec.decode`); an entry that is gone from the log or cannot be
decoded is still delivered (its position, no event), so the caller can acknowledge or dead-letter it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from events.codec import decode
from events.envelope import Event
from events.redis import keys
from events.redis.replies import as_str, entries


@dataclass(frozen=True, slots=True)
class Delivery:
    """One entry handed to this consumer. `event` is None when the entry is no longer in the log
    (`error` None) or could not be decoded (`error` says why)."""

    position: str
    event: Event | None
    error: str | None = None

    @property
    def missing(self) -> bool:
        return self.event is None and self.error is None


@dataclass(frozen=True, slots=True)
class Pending:
    """An entry delivered and not acknowledged (XPENDING): its position and delivery count."""

    position: str
    deliveries: int


@dataclass
class ConsumerGroup:
    redis: Redis
    group: str
    consumer: str
    stream: str = keys.STREAM
    dead_letters: str = keys.REACTIONS_DEAD

    async def create(self) -> bool:
        """Create the group at the start of the log (and the stream when missing, so a new deployment
        also sees what was committed before it ran). False when the group exists already (BUSYGROUP)."""
        try:
            await self.redis.xgroup_create(self.stream, self.group, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
            return False
        return True

    async def read(self, *, count: int, block_ms: int | None, own_pending: bool = False) -> list[Delivery]:
        """Up to `count` events never delivered to the group, waiting up to `block_ms` for them
        (XREADGROUP `>`); with `own_pending`, this consumer's unacknowledged events instead (id `0`,
        never blocking)."""
        reply: Any = await self.redis.xreadgroup(self.group, self.consumer, {self.stream: "0" if own_pending else ">"},
                                            count=count, block=None if own_pending else block_ms)
        return [d for _, items in reply or [] for d in _deliveries(items)]

    async def pending(self, *, idle_ms: int, count: int) -> list[Pending]:
        """Up to `count` entries of any consumer pending for at least `idle_ms`, oldest first."""
        reply = await self.redis.xpending_range(self.stream, self.group, min="-", max="+", count=count, idle=idle_ms)
        return [Pending(as_str(p["message_id"]), int(p["times_delivered"])) for p in reply or ()]

    async def claim(self, positions: Sequence[str], *, idle_ms: int) -> list[Delivery]:
        """Take over the given pending entries that are still idle for `idle_ms` (XCLAIM)."""
        return _deliveries(await self.redis.xclaim(self.stream, self.group, self.consumer, idle_ms, list(positions)))

    async def ack(self, position: str) -> None:
        await self.redis.xack(self.stream, self.group, position)

    async def dead_letter(self, position: str, policy: str, error: str, deliveries: int) -> None:
        """Record the entry in the dead-letter stream (error cut to 1000 characters), then acknowledge it."""
        await self.redis.xadd(self.dead_letters, {"position": position, "policy": policy, "error": error[:1000],
                                                  "deliveries": str(deliveries)})
        await self.ack(position)


def group_lost(exc: BaseException) -> bool:
    """True when `exc` says the group (with its stream) no longer exists: a wiped log (keys.EPOCH)."""
    return isinstance(exc, ResponseError) and ("NOGROUP" in str(exc) or "no longer exists" in str(exc))


def _deliveries(items: Any) -> list[Delivery]:
    out = []
    for pos, fields in entries(items):
        if fields is None:  # not in the log any more (the product never trims it)
            out.append(Delivery(pos, None))
            continue
        try:
            out.append(Delivery(pos, decode(pos, fields)))
        except Exception as exc:  # noqa: BLE001 - an undecodable event is delivered as such
            out.append(Delivery(pos, None, str(exc)))
    return out
