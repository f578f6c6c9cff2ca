"""Correction cascade (flow 4): when a memory is corrected, every memory that DEPENDS_ON it may be
outdated — each is marked `freshness=stale` by a `memory.marked_stale` event (a new version whose
history names the corrected memory and the correction's reason). Reads the graph projection at
the correction (the runner waits for it), so dependants committed before the correction are found."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from events.catalogue import MemoryCorrected, MemoryMarkedStale, new_event
from events.envelope import Event

MAX_DEPENDANTS = 500


@dataclass
class CorrectionCascadePolicy:
    graph: Any                        # projections.graph.reader.GraphReader
    store: Any                        # events.redis.store.EventStore (write-side memory index)
    name: str = "correction_cascade"
    reads: tuple[str, ...] = ("graph",)

    def wants(self, event: Event) -> bool:
        return isinstance(event.data, MemoryCorrected)

    async def decide(self, event: Event) -> list[Event]:
        d: MemoryCorrected = event.data
        dependants = (await asyncio.to_thread(self.graph.dependants, d.memory_id))[:MAX_DEPENDANTS]
        out = []
        for mid in dependants:
            current = await self.store.memory_index(mid)
            if current is None or current.deleted:
                continue
            reason = f"depends on {d.memory_id}, corrected to version {d.version}: {d.reason}"
            out.append(new_event(MemoryMarkedStale(mid, current.namespace, current.version + 1, reason[:1000],
                                                   d.memory_id), ns=current.namespace, agent="system",
                                 by="reaction"))
        return out
