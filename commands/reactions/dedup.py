"""Dedup policy (seed 6.2): one fact, one memory.

On each `memory.committed`, once the memories projection has it, the memories nearest the new one
in its own namespace are compared with it (`commands.conflicts`):

- the same fact again (a **duplicate**) -> the new memory is merged into the stored one, which
  keeps its id, history and standing and gains the new one's provenance;
- an **update** (a replacement: an update cue, or the same agent and source with another value)
  -> the stored memory is merged into the new one.

A merge is `memory.merged` (an LWW `merged_into` register on the merged memory, which leaves recall
and gets a tombstone row with reason `merged`); `POST /api/v1/admin/unmerge` undoes it. Only
memories of the same namespace are merged, at most one per commit (the closest).

With the learned pair judge a pair is merged when the judge calls it a duplicate or a replacement.
When either memory was distilled that is enough. Two direct commits need more, because an agent that
commits two close facts usually means both — several ports, several GPUs, a conversation's turns
(LoCoMo's turns lost 4.8 points of recall@5 when any judged pair of them merged). They need a
probability of at least :data:`DIRECT_MERGE_PROBABILITY` and a cosine of at least
:data:`DIRECT_DUPLICATE_COSINE`, and a replacement also needs an explicit update cue in the newer
memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from commands.conflicts.compare import DUPLICATE, REPLACEMENT, Side, Verdict
from commands.conflicts.detector import ConflictDetector, Found, new_side
from commands.conflicts.judge import PairModel
from events.catalogue import MemoryCommitted, MemoryMerged, new_event
from events.envelope import Event
from projections.consolidation.reader import is_mined

DIRECT_DUPLICATE_COSINE: Final = 0.93
DIRECT_MERGE_PROBABILITY: Final = 0.9


def mergeable(new: Side, found: Found) -> bool:
    """Is this verdict strong enough to merge (the scope and thresholds above)?"""
    v: Verdict = found.verdict
    if v.relation not in (DUPLICATE, REPLACEMENT):
        return False
    if new.distilled or found.old_distilled:
        return True
    strong = v.confidence >= DIRECT_MERGE_PROBABILITY and v.cosine >= DIRECT_DUPLICATE_COSINE
    return strong and (v.relation == DUPLICATE or v.kind == "cue")


@dataclass
class DedupPolicy:
    recall: Any                      # projections.queries.recall.service.RecallService
    store: Any                       # events.redis.store.EventStore (the write-side index: versions)
    model: PairModel                 # the learned pair judge
    name: str = "dedup"
    reads: tuple[str, ...] = ("memories",)

    def wants(self, event: Event) -> bool:
        return isinstance(event.data, MemoryCommitted) and bool(event.data.content.strip()) and \
            not is_mined(event.data.extractor)   # a pattern summarises its members: never merged with them

    async def decide(self, event: Event) -> list[Event]:
        d: MemoryCommitted = event.data
        new = new_side(event)
        found = await ConflictDetector(self.recall, self.model).related(new, d.content, d.namespace)
        best = next((f for f in found if f.namespace == d.namespace and mergeable(new, f)), None)
        if best is None:
            return []
        duplicate = best.verdict.relation == DUPLICATE
        loser, survivor = (d.memory_id, best.memory_id) if duplicate else (best.memory_id, d.memory_id)
        index = await self.store.memory_indexes([loser, survivor])
        li, si = index.get(loser), index.get(survivor)
        if li is None or si is None or li.deleted or si.deleted or li.merged_into or si.merged_into:
            return []
        rows = await self.recall.rows([loser])
        row = rows.get(loser)
        if row is None:
            return []
        return [new_event(MemoryMerged(loser, li.namespace, li.version + 1, survivor, si.namespace,
                                       reason="duplicate" if duplicate else "replaced", content=row["content"],
                                       agent=row.get("agent_id", ""), source=row.get("source", ""),
                                       cosine=round(best.verdict.cosine, 6), overlap=round(best.verdict.overlap, 6)),
                          ns=li.namespace, agent="system", by="reaction")]
