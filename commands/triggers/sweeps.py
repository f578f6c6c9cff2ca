"""Sweeps: what the `merge` and `conflict` triggers run (seed 6.4) — a policy applied to the
memories committed since the trigger's last sweep, read from the log after its mark.

A sweep waits until the projections its policy reads have reached each event, decides, and appends
the follow-ups with the reaction key of (event, policy), so a decision the per-event reaction
already appended is not appended twice. At most `limit` memories per run; the mark (`through`)
moves to the last event examined, so the next run goes on from there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import structlog

from commands.conflicts.detector import ConflictDetector, detected_events
from commands.conflicts.judge import PairModel
from commands.reactions.runner import reaction_key
from events.catalogue import MemoryCommitted
from events.envelope import Event
from events.redis.store import Idempotency
from projections.consolidation.reader import is_mined
from projections.text.entities import entity_keys

log = structlog.get_logger(__name__)

SCAN = 2000          # events read per run, at most
LIMIT = 200          # memories decided per run, at most


def names_entity(event: Event) -> bool:
    """A commit that names an entity (seed 6.4's conflict condition: "a write to the same entity")."""
    return isinstance(event.data, MemoryCommitted) and bool(event.data.content.strip()) and \
        not is_mined(event.data.extractor) and bool(entity_keys(event.data.content))


@dataclass
class ConflictSweepPolicy:
    """Each commit against its stored neighbours, as at the door, keeping only conflicts not known
    yet: those of memories committed together (one batch), or while the check was paused."""

    recall: Any                      # projections.queries.recall.service.RecallService
    model: PairModel
    conflicts: Any                   # projections.conflicts.reader.ConflictsReader
    name: str = "conflict_sweep"
    reads: tuple[str, ...] = ("memories", "conflicts")

    def wants(self, event: Event) -> bool:
        return names_entity(event)

    async def decide(self, event: Event) -> list[Event]:
        [found] = await ConflictDetector(self.recall, self.model).conflicts([event])
        fresh = [f for f in found if await self.conflicts.get(f.conflict_id) is None]
        return detected_events(event, fresh, reaction=True)


@dataclass
class Sweep:
    store: Any                       # events.redis.store.EventStore
    waiter: Any                      # projections.core.waiter.CheckpointWaiter
    policy: Any                      # commands.reactions.policy.Policy
    scan: int = SCAN
    limit: int = LIMIT
    wait_s: float = 30.0

    async def pending(self, after: str | None) -> tuple[int, str]:
        """How many commits since `after` the policy wants (up to `scan` events read), and the last
        position read."""
        events = await self.store.read(after, count=self.scan)
        return sum(1 for e in events if self.policy.wants(e)), events[-1].position if events else (after or "")

    async def run(self, after: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
        """One sweep from `after`: (result, marks)."""
        events = await self.store.read(after, count=self.scan)
        through, examined, appended, written = after or "", 0, 0, ""
        for event in events:
            if self.policy.wants(event):
                if examined >= self.limit:
                    break
                examined += 1
                # the projections have this event, and what this sweep appended before it (a conflict
                # found from one side must not be found again from the other)
                if not await self.waiter.wait(list(self.policy.reads), written or event.position, self.wait_s):
                    break   # the projections lag: the next run starts from here
                follow = [e if e.cause else replace(e, cause=event.position) for e in await self.policy.decide(event)]
                if follow:
                    key = reaction_key(event.position, self.policy.name)
                    res = await self.store.append(follow, idempotency=Idempotency("reaction", key, key))
                    appended += 0 if res.duplicate else len(follow)
                    written = res.position
            through = event.position
        log.info("trigger.sweep", policy=self.policy.name, examined=examined, appended=appended, through=through)
        return {"examined": examined, "appended": appended}, {"through": through}
