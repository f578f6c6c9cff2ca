"""Auto-resolution policy (seed 3.3.2): a detected conflict that the rules of
`commands.conflicts.auto_resolution` can settle is settled at once — `conflict.resolved` with the rule
that decided it, and the loser `memory.deprecated` with reason `conflict:<id>` — so no one is asked;
the others stay open (`GET /api/v1/conflicts`). A conflict already resolved, or whose memories are
gone, is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from commands.conflicts.auto_resolution import decide as auto_decide
from events.catalogue import ConflictDetected, ConflictResolved, MemoryDeprecated, new_event
from events.envelope import Event


@dataclass
class ConflictAutoResolvePolicy:
    memories: Any                    # projections.memories.reader.MemoriesReader
    conflicts: Any                   # projections.conflicts.reader.ConflictsReader
    store: Any                       # events.redis.store.EventStore (versions)
    name: str = "conflict_auto_resolve"
    reads: tuple[str, ...] = ("memories", "conflicts")

    def wants(self, event: Event) -> bool:
        return isinstance(event.data, ConflictDetected) and len(set(event.data.memory_ids)) == 2

    async def decide(self, event: Event) -> list[Event]:
        d: ConflictDetected = event.data
        current = await self.conflicts.get(d.conflict_id)
        if current is None or current["status"] != "open":
            return []
        ids = list(dict.fromkeys(d.memory_ids))
        rows = await self.memories.arows(ids)
        if len(rows) < 2:
            return []
        a, b = rows[ids[0]], rows[ids[1]]
        profile = await self.conflicts.profile(d.kind, a.get("source", ""), b.get("source", ""))
        verdict = auto_decide(d.kind, a, b, profile)
        if verdict is None:
            return []
        loser = (await self.store.memory_indexes([verdict.loser])).get(verdict.loser)
        if loser is None or loser.deleted or loser.merged_into:
            return []
        ns = d.namespace
        return [new_event(ConflictResolved(d.conflict_id, ns, verdict.strategy, verdict.winner, verdict.loser,
                                           verdict.rule, tuple(ids), rows[verdict.winner].get("source", ""),
                                           rows[verdict.loser].get("source", "")),
                          ns=ns, agent="system", by="reaction"),
                new_event(MemoryDeprecated(verdict.loser, loser.namespace, loser.version + 1,
                                           f"conflict:{d.conflict_id}"), ns=loser.namespace, agent="system",
                          by="reaction")]
