"""What the log and the projections hold (GET /api/v1/stats, GET /health): memories per namespace,
the log's length and end, and where each projector stands."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from events import positions
from events.redis.store import EventStore
from projections.memories.reader import MemoriesReader


@dataclass(frozen=True, slots=True)
class StatsView:
    by_namespace: dict[str, int]          # live memories per readable namespace, sorted by namespace
    events: int                           # the log's length
    last_position: str | None
    projectors: dict[str, dict[str, Any]]  # name -> position, caught_up, lag_ms


class Stats:
    reads: ClassVar[tuple[str, ...]] = ("memories",)

    def __init__(self, store: EventStore, memories: MemoriesReader, projectors: list[str]) -> None:
        self.store = store
        self.memories = memories
        self.projector_names = projectors   # the projectors this deployment runs

    async def projectors(self) -> tuple[str | None, dict[str, dict[str, Any]]]:
        """The log's last position and, per projector: its checkpoint, whether it reached that
        position, and how far behind it is in ms (None when it has no checkpoint yet)."""
        last = await self.store.last_position()
        cps = await self.store.checkpoints()
        out = {}
        for name in self.projector_names:
            cp = cps.get(name)
            lag_ms = max(0, positions.key(last)[0] - positions.key(cp)[0]) if last and cp else (0 if not last else None)
            out[name] = {"position": cp, "caught_up": positions.reached(cp, last), "lag_ms": lag_ms}
        return last, out

    async def view(self, readable: Callable[[str], bool] | None = None) -> StatsView:
        """Counts over the namespaces that are `readable` (None: all of them)."""
        by_ns, length, (last, projectors) = await asyncio.gather(
            asyncio.to_thread(self.memories.count_by_namespace), self.store.length(), self.projectors())
        if readable is not None:
            by_ns = {ns: n for ns, n in by_ns.items() if readable(ns)}
        return StatsView(dict(sorted(by_ns.items())), length, last, projectors)
