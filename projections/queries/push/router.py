"""From log events to push messages, with their recipients (seed 2.7's WebSocket event types).

| event                    | push type                 | recipients                                          |
|--------------------------|---------------------------|-----------------------------------------------------|
| recall.served (prefetch) | prefetch.push             | the agent that recalled                             |
| memory.corrected         | memory.updated            | the memory's owner and the owners of its DEPENDS_ON dependants |
| memory.marked_stale      | memory.updated            | the memory's owner                                  |
| conflict.detected        | conflict.detected         | the owners of the memories in conflict              |
| conflict.resolved        | conflict.resolved         | the owners of the memories in conflict              |
| memory.quality_dropped   | quality.drop              | the memory's owner                                  |
| gap.detected, gap.filled | gap.detected, gap.filled  | the agent whose recalls missed                      |
| consolidation.completed  | deep.consolidation.done   | every agent                                         |
| worldmodel.updated       | worldmodel.updated        | every agent (counts; the model: GET /api/v1/l3/worldmodel) |

A memory's owner is the agent that committed it (the write-side index). Privacy: a recipient is
only told about a memory it may read (`Recipient.can_read`, the access rule: never another agent's
`-ephemeral` namespace); a conflict entry it may not read is left out, and content is only sent
for memories in namespaces the recipient reads. An event gives at most one message per agent, so
a message's position (its event's) identifies it: resuming `after` a position is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Protocol

from events.catalogue import (
    MemoryCorrected, MemoryMarkedStale, MemoryQualityDropped, RecallServed,
)
from events.conflict_events import ConflictDetected, ConflictResolved
from events.learning_events import GapDetected, GapFilled, WorldModelUpdated
from events.consolidation_events import ConsolidationCompleted
from events.envelope import Event

#: A message every connected agent receives.
EVERYONE = "*"

#: The push types, in the order of the seed's table (2.7).
PUSH_TYPES = ("prefetch.push", "gap.detected", "gap.filled", "memory.updated", "conflict.detected",
              "conflict.resolved", "deep.consolidation.done", "quality.drop", "worldmodel.updated")

QUALITY_SUGGESTION = ("quality fell below 0.3 after at least 5 feedbacks: correct it (POST /api/v1/feedback/correct) "
                      "or deprecate it; unless feedback lifts it, forgetting evicts it after 7 days")

_ROUTED = (RecallServed, MemoryCorrected, MemoryMarkedStale, ConflictDetected, ConflictResolved,
           MemoryQualityDropped, ConsolidationCompleted, GapDetected, GapFilled, WorldModelUpdated)


@dataclass(frozen=True, slots=True)
class PushMessage:
    position: str       # of the event it was derived from
    agent: str          # the recipient (EVERYONE: every agent)
    type: str
    data: dict[str, Any]

    def wire(self) -> dict[str, Any]:
        return {"type": self.type, "position": self.position, "data": self.data}


class Recipient(Protocol):
    """An agent as routing sees it (`commands.access.Actor` is one)."""

    @property
    def agent_id(self) -> str: ...

    def can_read(self, namespace: str) -> bool: ...


class PushLookups(Protocol):
    """The reads routing needs (`gateway.process` builds them from the store and the read models)."""

    async def owners(self, memory_ids: list[str]) -> dict[str, tuple[str, str]]:
        """memory id -> (owning agent, namespace), from the write-side index; unknown ids left out."""

    async def actor(self, agent_id: str) -> Recipient | None:
        """A registered agent (its namespaces), None for an unknown one."""

    async def dependants(self, memory_id: str) -> list[str]:
        """Memories that DEPENDS_ON `memory_id` (the graph as it is)."""

    async def contents(self, memory_ids: list[str], position: str | None = None) -> dict[str, tuple[str, str]]:
        """memory id -> (content, namespace) of live memories (the memories projection; once it reached
        `position`, when given, or a moment passed)."""


def routes(event: Event) -> bool:
    """Whether `event` may give push messages (cheap: checked before any lookup)."""
    if isinstance(event.data, RecallServed):
        return bool(event.data.prefetch_ids)
    return isinstance(event.data, _ROUTED)


@dataclass
class PushRouter:
    lookups: PushLookups

    async def route(self, events: Iterable[Event], *, only: str | None = None,
                    agents: set[str] | None = None) -> list[PushMessage]:
        """The messages of `events`, in log order: for agent `only`, when given, else for `agents`
        (None: for everyone). A recall's prefetch is only looked up for an agent wanted."""
        wanted = {only} if only is not None else agents
        out: list[PushMessage] = []
        for event in events:
            if not routes(event):
                continue
            if wanted is not None and isinstance(event.data, RecallServed) and event.agent not in wanted:
                continue
            out.extend(m for m in await self._route(event) if wanted is None or m.agent == EVERYONE
                       or m.agent in wanted)
        return out

    async def _route(self, event: Event) -> list[PushMessage]:
        d = event.data
        pos = event.position
        if isinstance(d, RecallServed):
            return await self._prefetch(event, d)
        if isinstance(d, MemoryCorrected):
            dependants = await self.lookups.dependants(d.memory_id)
            owners = await self.lookups.owners([d.memory_id, *dependants])
            told = [owners[d.memory_id][0]] if d.memory_id in owners else []
            told += [owners[m][0] for m in dependants if m in owners]
            data = {"memory_id": d.memory_id, "new_version": d.version, "reason": d.reason, "change": "corrected",
                    "namespace": d.namespace}
            return await self._about(pos, "memory.updated", told, d.namespace, data)
        if isinstance(d, MemoryMarkedStale):
            data = {"memory_id": d.memory_id, "new_version": d.version, "reason": d.reason, "change": "stale",
                    "namespace": d.namespace, "caused_by": d.caused_by}
            return await self._owner_told(pos, "memory.updated", d.memory_id, d.namespace, data)
        if isinstance(d, MemoryQualityDropped):
            data = {"memory_id": d.memory_id, "score": d.quality_score, "feedback": d.feedback,
                    "namespace": d.namespace, "suggestion": QUALITY_SUGGESTION}
            return await self._owner_told(pos, "quality.drop", d.memory_id, d.namespace, data)
        if isinstance(d, (ConflictDetected, ConflictResolved)):
            return await self._conflict(pos, d)
        if isinstance(d, GapDetected):
            return [PushMessage(pos, d.agent, "gap.detected",
                                {"gap_id": d.gap_id, "query": d.query, "gap_type": d.gap_type,
                                 "suggestion": d.suggestion, "queries": list(d.queries)})]
        if isinstance(d, GapFilled):
            return [PushMessage(pos, d.agent, "gap.filled",
                                {"gap_id": d.gap_id, "query": d.query, "filled_count": d.filled_count,
                                 "repair": d.repair, "memory_ids": list(d.memory_ids), "detail": d.detail})
                    ] if d.agent else []
        if isinstance(d, WorldModelUpdated):
            return [PushMessage(pos, EVERYONE, "worldmodel.updated",
                                {"reason": d.reason, "entities": len(d.entities), "interactions": len(d.interactions),
                                 "constraints": len(d.constraints),
                                 "hard_constraints": sum(1 for c in d.constraints if c.get("hard"))})]
        if isinstance(d, ConsolidationCompleted):
            report = dict(d.report or {})
            return [PushMessage(pos, EVERYONE, "deep.consolidation.done",
                                {"run_id": d.run_id, "trigger": d.trigger, "report": report,
                                 "steps": [{"step": s.get("step"), "status": s.get("status")} for s in d.steps]})]
        return []

    async def _prefetch(self, event: Event, d: RecallServed) -> list[PushMessage]:
        actor = await self.lookups.actor(event.agent)
        if actor is None:        # the admin key recalling for nobody: no one to tell
            return []
        rows = await self.lookups.contents(list(d.prefetch_ids))
        readable = set(d.namespaces)
        memories = [{"id": mid, "content": rows[mid][0], "namespace": rows[mid][1], "score": round(weight, 6)}
                    for mid, weight in zip(d.prefetch_ids, d.prefetch_weights)
                    if mid in rows and rows[mid][1] in readable and actor.can_read(rows[mid][1])]
        if not memories:
            return []
        return [PushMessage(event.position, actor.agent_id, "prefetch.push",
                            {"query": d.query, "trace_id": d.trace_id, "memories": memories})]

    async def _owner_told(self, pos: str, kind: str, memory_id: str, namespace: str,
                          data: dict[str, Any]) -> list[PushMessage]:
        owner = (await self.lookups.owners([memory_id])).get(memory_id)
        return await self._about(pos, kind, [owner[0]] if owner else [], namespace, data)

    async def _about(self, pos: str, kind: str, agents: list[str], namespace: str,
                     data: dict[str, Any]) -> list[PushMessage]:
        """One message per distinct agent of `agents` that may read `namespace`."""
        out = []
        for agent in dict.fromkeys(agents):
            actor = await self.lookups.actor(agent)
            if actor is not None and actor.can_read(namespace):
                out.append(PushMessage(pos, agent, kind, data))
        return out

    async def _conflict(self, pos: str, d: ConflictDetected | ConflictResolved) -> list[PushMessage]:
        ids = list(d.memory_ids)
        owners = await self.lookups.owners(ids)
        contents = await self.lookups.contents(ids, pos) if isinstance(d, ConflictDetected) else {}
        out = []
        for agent in dict.fromkeys(owners[m][0] for m in ids if m in owners):
            actor = await self.lookups.actor(agent)
            if actor is None:
                continue
            entries = []
            for mid in ids:
                ns = owners[mid][1] if mid in owners else d.namespace
                if not actor.can_read(ns):
                    continue
                entry: dict[str, Any] = {"memory_id": mid, "namespace": ns}
                if mid in contents:
                    entry["content"] = contents[mid][0]
                entries.append(entry)
            if isinstance(d, ConflictDetected):
                data = {"conflict_id": d.conflict_id, "kind": d.kind, "confidence": d.confidence,
                        "evidence": d.evidence, "entries": entries}
                out.append(PushMessage(pos, agent, "conflict.detected", data))
            else:
                resolution = {"strategy": d.strategy, "winner": d.winner, "loser": d.loser, "rule": d.rule}
                out.append(PushMessage(pos, agent, "conflict.resolved",
                                       {"conflict_id": d.conflict_id, "resolution": resolution,
                                        "memory_ids": [e["memory_id"] for e in entries]}))
        return out

