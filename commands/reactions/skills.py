"""Skill crystallisation (seed 6.5): useful feedback that leaves an L2 pattern eligible
(`commands.learning.skills.eligible`: >= 3 useful votes, no open conflict, not deprecated, not a skill
yet) crystallises it into a skill (`skill.crystallized`, memory_type skill), its votes as first trials.
Reads the memories, conflicts and learning projections at the feedback (the runner waits for them);
the learning projection keeps one skill per memory, so a second crystallisation decided before the
first was folded changes nothing."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from commands.learning.skills import eligible, skill_name
from events.catalogue import MemoryFeedback, SkillCrystallized, new_event
from events.envelope import Event


@dataclass
class SkillCrystallizationPolicy:
    memories: Any       # projections.memories.reader.MemoriesReader
    conflicts: Any      # projections.conflicts.reader.ConflictsReader
    learning: Any       # projections.learning.reader.LearningReader
    name: str = "skill_crystallization"
    reads: tuple[str, ...] = ("memories", "conflicts", "learning")

    def wants(self, event: Event) -> bool:
        return isinstance(event.data, MemoryFeedback) and event.data.verdict == "useful"

    async def decide(self, event: Event) -> list[Event]:
        mid = event.data.memory_id
        row = await asyncio.to_thread(self.memories.get, mid)
        if row is None or row.get("is_deleted") or row.get("category") != "pattern":
            return []
        useful, not_useful = int(row.get("useful_count") or 0), int(row.get("not_useful_count") or 0)
        open_conflicts = await asyncio.to_thread(self.conflicts.open_count, mid)
        already = await asyncio.to_thread(self.learning.skill_of, mid) is not None
        if not eligible(row["category"], row.get("status") or "active", useful, open_conflicts, already):
            return []
        payload = SkillCrystallized(skill_name(row["content"], mid), mid, row["namespace"], row["content"],
                                    useful, not_useful)
        return [new_event(payload, ns=row["namespace"], agent="system", by="reaction")]
