"""The reads push routing makes (`projections.queries.push.router.PushLookups`): owners from the write-side index, agents'
namespaces, DEPENDS_ON dependants from the graph, contents from the memories projection."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from commands.access import Actor

LIVE = ("active", "")   # memory statuses whose content may be pushed
CATCH_UP_S = 2.0        # how long a lookup waits for its projection to reach the event (then reads what is there)


@dataclass
class ReadModelLookups:
    store: Any          # events.redis.store.EventStore: write-side memory and agent indexes
    graph: Any          # projections.graph.reader.GraphReader
    memories: Any       # projections.memories.reader.MemoriesReader
    waiter: Any         # projections.core.waiter.CheckpointWaiter
    _actors: dict[str, Actor] = field(default_factory=dict)   # namespaces never change once registered

    async def owners(self, memory_ids: list[str]) -> dict[str, tuple[str, str]]:
        found = await self.store.memory_indexes(list(dict.fromkeys(memory_ids)))
        return {mid: (idx.agent, idx.namespace) for mid, idx in found.items()}

    async def actor(self, agent_id: str) -> Actor | None:
        actor = self._actors.get(agent_id)
        if actor is None and agent_id:
            idx = await self.store.agent_index(agent_id)
            if idx is None:
                return None
            actor = self._actors[agent_id] = Actor(idx.agent_id, idx.main_namespace, idx.ephemeral_namespace)
        return actor

    async def dependants(self, memory_id: str) -> list[str]:
        # not waiting for the graph to reach the correction: its dependants were committed before it, and
        # one committed a moment before (not yet in the graph) is still told: the cascade, which waits,
        # marks it stale and that is pushed to its owner
        return await asyncio.to_thread(self.graph.dependants, memory_id)

    async def contents(self, memory_ids: list[str], position: str | None = None) -> dict[str, tuple[str, str]]:
        if position is not None:
            await self.waiter.wait(["memories"], position, CATCH_UP_S)
        rows = await self.memories.arows(list(dict.fromkeys(memory_ids)), columns=["id", "content", "namespace",
                                                                                   "status"])
        return {mid: (row["content"], row["namespace"]) for mid, row in rows.items() if row.get("status", "") in LIVE}
