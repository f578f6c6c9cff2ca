"""Conflicts of distilled memories (seed 3.3.2: "every commit's new distillation is compared with the
namespace's records"). An agent's commit is checked at the door (`commands.handlers`); a memory the
distillation reaction writes has no request to answer, so this policy checks it once the memories
projection has it, with the same detector, and appends its `conflict.detected` events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from commands.conflicts.detector import ConflictDetector, detected_events
from commands.conflicts.judge import PairModel
from events.catalogue import MemoryCommitted
from events.envelope import Event
from projections.consolidation.reader import is_distilled


@dataclass
class DistilledConflictsPolicy:
    recall: Any                      # projections.queries.recall.service.RecallService
    model: PairModel
    name: str = "distilled_conflicts"
    reads: tuple[str, ...] = ("memories",)

    def wants(self, event: Event) -> bool:
        """Distilled memories; not a pattern (L2), which summarises memories it would "contradict"."""
        return isinstance(event.data, MemoryCommitted) and is_distilled(event.data.extractor) and \
            bool(event.data.content.strip())

    async def decide(self, event: Event) -> list[Event]:
        [found] = await ConflictDetector(self.recall, self.model).conflicts([event])
        return detected_events(event, found, reaction=True)
