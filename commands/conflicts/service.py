"""Conflict and merge commands: resolve a conflict, undo a merge (the I/O around the pure decisions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog

from commands.access import Actor
from commands.conflicts.resolution import outcome
from commands.error_codes import ErrorCode
from commands.errors import Conflict, Forbidden, NotFound
from events.catalogue import ConflictResolved, MemoryDeprecated, MemoryMerged, MemoryUnmerged, new_event
from events.envelope import Event
from events.errors import GuardFailed
from events.redis.indexes import Guard
from events.redis.store import EventStore

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Resolved:
    conflict_id: str
    strategy: str
    winner: str
    loser: str
    position: str


@dataclass(frozen=True, slots=True)
class Unmerged:
    memory_id: str
    merged_into: str
    version: int
    position: str


@dataclass
class ConflictCommands:
    store: EventStore
    conflicts: Any        # projections.conflicts.reader.ConflictsReader
    memories: Any         # projections.memories.reader.MemoriesReader (rows of deleted/merged memories too)

    async def resolve(self, actor: Actor, conflict_id: str, strategy: str, winner: str = "") -> Resolved:
        conflict = await self.conflicts.get(conflict_id)
        if conflict is None or not all(actor.can_read(ns) for ns in conflict["namespaces"]):
            raise NotFound(f"conflict {conflict_id} not found", {"conflict_id": conflict_id})
        if conflict["status"] != "open":
            raise Conflict(f"conflict {conflict_id} is already resolved ({conflict['resolution']['strategy']})",
                           {"conflict_id": conflict_id, "resolution": conflict["resolution"]})
        ids = conflict["memory_ids"]
        rows = await self.memories.arows(ids)
        if len(rows) < 2:
            raise Conflict(f"a memory of conflict {conflict_id} no longer exists", {"conflict_id": conflict_id})
        out = outcome(strategy, conflict, rows, winner)
        index = await self.store.memory_indexes(ids)
        loser_ns = rows[out.loser]["namespace"] if out.loser else ""
        if out.loser and not actor.can_write(loser_ns):
            raise Forbidden(f"resolving needs write access to the losing memory {out.loser} ({loser_ns})",
                            {"memory_id": out.loser, "namespace": loser_ns})
        if not out.loser and not any(actor.can_write(ns) for ns in conflict["namespaces"]):
            raise Forbidden("resolving needs write access to one of the conflict's memories",
                            {"conflict_id": conflict_id})
        sources = (rows[out.winner].get("source", "") if out.winner else "",
                   rows[out.loser].get("source", "") if out.loser else "")
        events: list[Event] = [new_event(ConflictResolved(conflict_id, conflict["namespaces"][0], strategy, out.winner,
                                                          out.loser, "", tuple(ids), *sources),
                                         ns=conflict["namespaces"][0], agent=actor.agent_id, by=actor.by)]
        guards = []
        if out.loser:
            li = index.get(out.loser)
            if li is None or li.deleted or li.merged_into:
                raise Conflict(f"memory {out.loser} was deleted or merged meanwhile", {"memory_id": out.loser})
            if out.merge:
                wi = index[out.winner]
                payload: Any = MemoryMerged(out.loser, li.namespace, li.version + 1, out.winner, wi.namespace,
                                            reason=f"conflict:{conflict_id}", content=rows[out.loser]["content"],
                                            agent=rows[out.loser].get("agent_id", ""),
                                            source=rows[out.loser].get("source", ""))
            else:
                payload = MemoryDeprecated(out.loser, li.namespace, li.version + 1, f"conflict:{conflict_id}")
            events.append(new_event(payload, ns=li.namespace, agent=actor.agent_id, by=actor.by))
            guards.append(Guard.memory_version(out.loser, li.version))
        try:
            res = await self.store.append(events, guards=guards)
        except GuardFailed as exc:
            raise Conflict(f"memory {out.loser} changed meanwhile; retry", {"memory_id": out.loser},
                           code=ErrorCode.VERSION_CONFLICT) from exc
        log.info("conflict.resolved", conflict_id=conflict_id, strategy=strategy, winner=out.winner, loser=out.loser)
        return Resolved(conflict_id, strategy, out.winner, out.loser, res.position)

    async def unmerge(self, memory_id: str, *, agent: str = "admin", by: str = "admin") -> Unmerged:
        """Undo a merge (admin): the memory is live on its own again."""
        index = await self.store.memory_index(memory_id)
        if index is None:
            raise NotFound(f"memory {memory_id} not found", {"memory_id": memory_id})
        if not index.merged_into:
            raise Conflict(f"memory {memory_id} is not merged", {"memory_id": memory_id})
        survivor = await self.store.memory_index(index.merged_into)
        event = new_event(MemoryUnmerged(memory_id, index.namespace, index.version + 1, index.merged_into,
                                         survivor.namespace if survivor else index.namespace),
                          ns=index.namespace, agent=agent, by=by)
        try:
            res = await self.store.append([event], guards=[Guard.memory_version(memory_id, index.version)])
        except GuardFailed as exc:
            raise Conflict(f"memory {memory_id} changed meanwhile; retry", {"memory_id": memory_id},
                           code=ErrorCode.VERSION_CONFLICT) from exc
        log.info("memory.unmerged", memory_id=memory_id, merged_into=index.merged_into, position=res.position)
        return Unmerged(memory_id, index.merged_into, index.version + 1, res.position)
