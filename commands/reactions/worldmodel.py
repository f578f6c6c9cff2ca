"""The world model's updates (seed 6.6), a reaction to the events the seed names: distillation (an
episode distilled, a memory a distiller wrote), configuration parsing (a memory from source
`config_parse` / 配置解析) and a person's feedback on the constraints (a constraint committed,
corrected, deprecated or deleted; corrections and removals of other memories change nothing here). It derives the model (`commands.learning.worldmodel`) and records
it as `worldmodel.updated` when it differs from the current one (pushed to every agent).

Deriving the graph part reads the whole entity table: after a constraint change it is always derived
again; after other causes at most once a minute of log time (a burst of distillations makes one update).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from commands.learning.worldmodel import model_of
from events.catalogue import (
    EpisodeDistilled, MemoryCommitted, MemoryCorrected, MemoryDeleted, MemoryDeprecated, WorldModelUpdated,
    new_event,
)
from events.envelope import Event
from events.vocabulary import SHARED_NAMESPACE

CONFIG_SOURCES = ("config_parse", "配置解析")
THROTTLE_MS = 60_000


@dataclass
class WorldModelPolicy:
    world: Any          # projections.graph.world.WorldReader
    memories: Any       # projections.memories.reader.MemoriesReader
    learning: Any       # projections.learning.reader.LearningReader: the current model
    name: str = "world_model"
    reads: tuple[str, ...] = ("graph", "memories", "learning")

    def wants(self, event: Event) -> bool:
        d = event.data
        if isinstance(d, MemoryCommitted):
            return d.category == "constraint" or d.source in CONFIG_SOURCES or bool(d.extractor)
        return isinstance(d, (EpisodeDistilled, MemoryCorrected, MemoryDeprecated, MemoryDeleted))

    async def decide(self, event: Event) -> list[Event]:
        current = await asyncio.to_thread(self.learning.worldmodel)
        constraint = await self._about_a_constraint(event, current)
        if not constraint and isinstance(event.data, (MemoryCorrected, MemoryDeprecated, MemoryDeleted)):
            return []                                   # feedback reaches the model through its constraints
        if not constraint and current is not None and event.wall_ms - int(current["at_ms"]) < THROTTLE_MS:
            return []
        entities = await asyncio.to_thread(self.world.entities)
        interactions = await asyncio.to_thread(self.world.interactions, [e["id"] for e in entities])
        model = model_of(entities, interactions, await self.memories.aconstraints())
        if current is not None and all(model[k] == current[k] for k in model):
            return []
        payload = WorldModelUpdated(tuple(model["entities"]), tuple(model["interactions"]),
                                    tuple(model["constraints"]), event.type, event.wall_ms)
        return [new_event(payload, ns=SHARED_NAMESPACE, agent="system", by="reaction")]

    async def _about_a_constraint(self, event: Event, current: dict[str, Any] | None) -> bool:
        d = event.data
        if isinstance(d, MemoryCommitted):
            return d.category == "constraint"
        mid = getattr(d, "memory_id", "")
        if current is not None and any(c["memory_id"] == mid for c in current["constraints"]):
            return True
        row = await asyncio.to_thread(self.memories.get, mid) if mid else None
        return row is not None and row.get("category") == "constraint"
