"""The provenance view of one memory (seed 3.3.3, GET /api/v1/memory/{id}/versions): its row from the
memories projection, its recall counts from the activity projection, and its derived scores at the
clock's now."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from events.clock import Clock
from projections.activity.reader import ActivityReader
from projections.memories.reader import MemoriesReader
from projections.memories.scores import Scores, scores_of


@dataclass(frozen=True, slots=True)
class VersionsView:
    row: dict[str, Any]          # the memories row, `version_history` included
    recall_count: int
    last_recalled_at: str        # ISO-8601, '' when never recalled
    scores: Scores               # derived at the clock's now


class MemoryVersions:
    reads: ClassVar[tuple[str, ...]] = ("memories", "activity")

    def __init__(self, memories: MemoriesReader, activity: ActivityReader, clock: Clock, rates: Any = None) -> None:
        self.memories = memories
        self.activity = activity
        self.clock = clock
        self.rates = rates   # .get() -> calibrated decay rates (projections.consolidation.reader.DecayRates)

    async def view(self, memory_id: str, readable: Callable[[str], bool] | None = None) -> VersionsView | None:
        """The memory's view, or None when it does not exist or its namespace is not `readable`
        (None: every namespace is)."""
        row = await asyncio.to_thread(self.memories.get, memory_id)
        if row is None or (readable is not None and not readable(row["namespace"])):
            return None
        counts = await asyncio.to_thread(self.activity.recalls, [memory_id])
        recalls, last_recalled = counts.get(memory_id, (0, ""))
        rates = self.rates.get() if self.rates is not None else None
        return VersionsView(row, recalls, last_recalled,
                            scores_of(row, self.clock.now_ms(), recalls, last_recalled, rates))
