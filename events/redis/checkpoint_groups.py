"""Checkpoint publishes of one process sent together (a group commit), only into the log the
projections were folded from.

The runners of a process publish a checkpoint after every batch. While one send is in flight,
what the others publish is gathered and sent next in one script call per log epoch; every
publisher of a group waits for that call and gets its error (e.g. `LogResetError`: the log's
epoch is not the one expected, nothing written).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Mapping

from redis.asyncio import Redis
from redis.commands.core import AsyncScript

from events.errors import LogResetError
from events.redis import keys
from events.redis.replies import as_str

__all__ = ["GroupedPublisher", "reset_message"]

_PUBLISH = """
local epoch = redis.call('GET', KEYS[1])
if epoch ~= ARGV[1] then return epoch or 0 end
local last = 2 + 2 * tonumber(ARGV[2])
redis.call('HSET', KEYS[2], unpack(ARGV, 3, last))
if #ARGV > last then redis.call('HSET', KEYS[3], unpack(ARGV, last + 1)) end
return 1
"""
"""Publish checkpoints (ARGV[2] projector/position pairs, then their generations) only into the log the
projections were folded from."""


def reset_message(expected: str | None, found: str | None) -> str:
    return (f"the event log was wiped or replaced (its epoch is {found or 'missing'}, expected {expected or 'none'}): "
            "nothing is read or written until the projections are rebuilt from the current log with "
            "`zhiyi replay --in-place`; agents registered in the lost log must register again")


@dataclass(slots=True)
class _PublishGroup:
    """Checkpoints (and generations) published while a send was in flight: sent together next."""
    done: asyncio.Future[None]
    checkpoints: dict[str, str] = field(default_factory=dict)
    generations: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class _Publishes:
    open: dict[str, _PublishGroup] = field(default_factory=dict)   # by log epoch
    flusher: asyncio.Future[None] | None = None

    def add(self, epoch: str, projector: str, position: str, generations: dict[str, str]) -> asyncio.Future[None]:
        group = self.open.get(epoch)
        if group is None:
            group = self.open[epoch] = _PublishGroup(asyncio.get_running_loop().create_future())
        group.checkpoints[projector] = position
        group.generations.update(generations)
        return group.done


class GroupedPublisher:
    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self._script: AsyncScript | None = None
        self._publishing: dict[asyncio.AbstractEventLoop, _Publishes] = {}

    async def publish(self, epoch: str, projector: str, position: str, generations: Mapping[str, str]) -> None:
        """Publish a checkpoint and the namespaces whose reads it changed ({namespace: position}) in
        the next group sent; returns once it is written."""
        loop = asyncio.get_running_loop()
        publishes = self._publishing.get(loop)
        if publishes is None:
            publishes = self._publishing[loop] = _Publishes()
        waiter = publishes.add(epoch, projector, position,
                               {keys.generation(projector, ns): pos for ns, pos in generations.items()})
        if publishes.flusher is None:
            publishes.flusher = asyncio.ensure_future(self._flush(loop, publishes))
        await asyncio.shield(waiter)

    async def _flush(self, loop: asyncio.AbstractEventLoop, publishes: _Publishes) -> None:
        """Send what was published while the previous send was in flight, one script call per log epoch,
        until nothing is left."""
        unsent: list[_PublishGroup] = []
        try:
            while publishes.open:
                groups, publishes.open = publishes.open, {}
                unsent = list(groups.values())
                for epoch, group in groups.items():
                    try:
                        await self._send(epoch, group)
                    except Exception as exc:  # noqa: BLE001 - handed to every publisher of the group
                        group.done.set_exception(exc)
                        group.done.exception()   # retrieved here; each of its publishers raises it
                    else:
                        group.done.set_result(None)
                    unsent.remove(group)
        finally:
            publishes.flusher = None
            for group in [*unsent, *publishes.open.values()]:   # cancelled meanwhile: nobody sends these
                if not group.done.done():
                    group.done.cancel()
            publishes.open = {}
            if self._publishing.get(loop) is publishes:
                del self._publishing[loop]

    async def _send(self, epoch: str, group: _PublishGroup) -> None:
        if self._script is None:
            self._script = self.redis.register_script(_PUBLISH)
        args: list[str | int] = [epoch, len(group.checkpoints)]
        for projector, position in group.checkpoints.items():
            args += [projector, position]
        for field_, pos in group.generations.items():
            args += [field_, pos]
        found = await self._script(keys=[keys.EPOCH, keys.CHECKPOINTS, keys.GENERATIONS], args=args)
        if found != 1:
            raise LogResetError(reset_message(epoch, as_str(found) if found else None))
