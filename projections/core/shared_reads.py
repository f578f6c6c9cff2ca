"""One read of the log for several runners folding the same range (a rebuild: `projections.core.replay`).

Each runner of a rebuild asks for the batch after its checkpoint; runners that start from the same
checkpoint and fold up to the same position ask for the same batches in the same order. `SharedReads`
reads each batch once (one XRANGE, one decoding) and hands it to every runner of the group: without
it each projector pays ~25 µs per event to read and decode the whole log again.

A runner may run ahead of the slowest by at most `window` batches (the batches in between are held
for the slower ones): memory stays bounded however the projectors' speeds differ. A runner retrying
a failed read asks for the same batch again and gets a fresh read of it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from events.envelope import Event

Read = Callable[[str | None], Awaitable[list[Event]]]

WINDOW = 4


@dataclass
class _Batch:
    after: str | None
    events: asyncio.Future[list[Event]]


@dataclass
class SharedReads:
    read: Read                      # the group's read: the batch after a position ([] at the end)
    consumers: int
    window: int = WINDOW
    _batches: dict[int, _Batch] = field(default_factory=dict, init=False)
    _taken: list[int] = field(init=False)                 # per runner: the index of the batch it asked for last
    _moved: asyncio.Condition = field(default_factory=asyncio.Condition, init=False)

    def __post_init__(self) -> None:
        if self.consumers < 1:
            raise ValueError("SharedReads needs at least one consumer")
        self._taken = [-1] * self.consumers

    def reader(self, consumer: int) -> Read:
        """The read function of runner `consumer` (0 <= consumer < consumers)."""
        async def read(after: str | None) -> list[Event]:
            return await self._read(consumer, after)
        return read

    async def _read(self, consumer: int, after: str | None) -> list[Event]:
        async with self._moved:
            last = self._taken[consumer]
            batch = self._batches.get(last)
            if batch is not None and batch.after == after:   # a runner asks again only when its read failed
                if _failed(batch.events):
                    batch = self._batches[last] = self._start(after)
            else:
                k = last + 1
                await self._moved.wait_for(lambda: k - min(self._taken) <= self.window)
                batch = self._batches.get(k)
                if batch is None or batch.after != after:   # the first to ask (or, never in a rebuild, a runner
                    batch = self._batches[k] = self._start(after)   # off the group's path: it reads its own)
                self._taken[consumer] = k
                lowest = min(self._taken)
                for old in [i for i in self._batches if i < lowest]:
                    del self._batches[old]
                self._moved.notify_all()
        return list(await asyncio.shield(batch.events))

    def _start(self, after: str | None) -> _Batch:
        events = asyncio.ensure_future(self.read(after))
        events.add_done_callback(_retrieve)
        return _Batch(after, events)


def _failed(events: asyncio.Future[list[Event]]) -> bool:
    return events.done() and (events.cancelled() or events.exception() is not None)


def _retrieve(task: asyncio.Future[list[Event]]) -> None:
    if not task.cancelled():
        task.exception()   # each runner awaiting it raises it itself
