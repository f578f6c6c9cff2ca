"""Quality notice policy (seed 3.2.1): feedback that leaves a memory below quality 0.3 with >= 5
votes (one per agent, its latest: the projection's derived counts) raises a
`memory.quality_dropped` notice (the importance x 0.5 follows from the counts in the projection at
once); feedback that lifts a noticed memory back withdraws it
(`memory.quality_recovered`). The scheduler deprecates memories still low 7 days after their
notice (`commands.scheduler`).

Whether a notice is open is read from the write-side index (`notice` in the memory's hash, set by
the append itself), not from the projection: the projection may already include later feedback
but not yet the notice a previous event raised, which would raise it twice."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from events.catalogue import MemoryFeedback, MemoryQualityDropped, MemoryQualityRecovered, new_event
from events.envelope import Event
from events.redis.counters import Counters
from commands.rules.time_rules import quality_low


@dataclass
class QualityNoticePolicy:
    reader: Any                      # projections.memories.reader.MemoriesReader
    counters: Counters
    name: str = "quality_notice"
    reads: tuple[str, ...] = ("memories",)

    def wants(self, event: Event) -> bool:
        return isinstance(event.data, MemoryFeedback)

    async def decide(self, event: Event) -> list[Event]:
        mid = event.data.memory_id
        row = await asyncio.to_thread(self.reader.get, mid)
        if row is None or row.get("is_deleted"):
            return []
        low, noticed = quality_low(row), await self.counters.quality_notice_open(mid)
        quality = round(float(row.get("quality_score") or 0.0), 6)
        if low and not noticed:
            feedback = int(row.get("useful_count") or 0) + int(row.get("not_useful_count") or 0)
            payload: Any = MemoryQualityDropped(mid, row["namespace"], quality, feedback)
        elif noticed and not low:
            payload = MemoryQualityRecovered(mid, row["namespace"], quality)
        else:
            return []
        return [new_event(payload, ns=row["namespace"], agent="system", by="reaction")]
