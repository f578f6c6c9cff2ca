"""Read-your-writes: wait until projectors have reached a position.

The truth is the checkpoint hash in Redis (`store.checkpoints()`), so waiting works when the
projectors run in another process. Runners in the same process call `notify` after each
batch, which wakes waiters at once; otherwise they poll Redis every `poll_s`.
"""

from __future__ import annotations

import asyncio

from events import positions
from events.redis.store import EventStore
from projections.core.errors import InvalidQuery


class CheckpointWaiter:
    def __init__(self, store: EventStore, *, poll_s: float = 0.02) -> None:
        self.store = store
        self.poll_s = poll_s
        self._wakers: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    def notify(self, name: str, position: str) -> None:
        """A runner published `position` for `name`: wake every waiter to re-check (thread-safe)."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for loop, event in list(self._wakers):
            if loop is running:
                event.set()
            elif not loop.is_closed():
                loop.call_soon_threadsafe(event.set)

    async def reached(self, names: list[str], position: str) -> bool:
        """One Redis round trip: have all `names` reached `position`?"""
        cps = await self.store.checkpoints()
        return all(positions.reached(cps.get(n), position) for n in names)

    async def wait(self, names: list[str], position: str, timeout_s: float = 5.0) -> bool:
        """True as soon as every named checkpoint is at/after `position`; False after `timeout_s`."""
        if not positions.is_valid(position):
            raise InvalidQuery(f"not a log position: {position!r}")
        if not names:
            return True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        waker = (loop, asyncio.Event())
        self._wakers.add(waker)  # registered before the first check: no notify is missed
        try:
            while True:
                waker[1].clear()
                if await self.reached(names, position):
                    return True
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return False
                try:
                    await asyncio.wait_for(waker[1].wait(), min(self.poll_s, remaining))
                except TimeoutError:
                    pass
        finally:
            self._wakers.discard(waker)
