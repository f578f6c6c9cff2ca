"""The dedup and conflict events (seed 3.3.2, 6.2; registered in `events.catalogue`, which re-exports
them): a memory merged into another and the merge undone, a contradiction detected and settled."""

from __future__ import annotations

from dataclasses import dataclass

from events.catalogue import event_type


@event_type("memory.merged")
@dataclass(frozen=True, slots=True)
class MemoryMerged:
    """One fact, one memory (seed 6.2): `memory_id` is folded into `merged_into` (an LWW register on
    it, so it leaves recall but keeps its row, and `memory.unmerged` brings it back). `reason`:
    `duplicate` (the same fact again) or `replaced` (a newer memory updated its value). The
    survivor keeps the merged memory's provenance (`agent`, `source`, `content`, recorded here so
    replay reads nothing else); the tombstones table gets a row with reason `merged`. `cosine` and
    `overlap` are the evidence the decision was made on."""

    memory_id: str
    namespace: str
    version: int
    merged_into: str
    survivor_namespace: str
    reason: str = "duplicate"
    content: str = ""
    agent: str = ""
    source: str = ""
    cosine: float = 0.0
    overlap: float = 0.0


@event_type("memory.unmerged")
@dataclass(frozen=True, slots=True)
class MemoryUnmerged:
    """A merge undone (`POST /api/v1/admin/unmerge`): `memory_id` is live again on its own, its
    tombstone row is marked restored."""

    memory_id: str
    namespace: str
    version: int
    merged_into: str
    survivor_namespace: str


@event_type("conflict.detected")
@dataclass(frozen=True, slots=True)
class ConflictDetected:
    """Two memories contradict each other (seed 3.3.2), found when the second was committed
    (`commands.conflicts`). `memory_ids` is (the new memory, the stored one); `kind` is `entity`
    (same subject and attribute, another value), `negation` (one denies the other) or `importance`
    (the same fact, another tier from another agent). `evidence` says what differed (e.g. the two
    values). The graph links them with CONFLICTS_WITH, weight = `confidence`."""

    conflict_id: str
    namespace: str
    memory_ids: tuple[str, ...]
    confidence: float = 0.5
    kind: str = "fact"
    evidence: str = ""
    namespaces: tuple[str, ...] = ()   # of memory_ids, in their order

    def __post_init__(self) -> None:
        object.__setattr__(self, "memory_ids", tuple(self.memory_ids))
        object.__setattr__(self, "namespaces", tuple(self.namespaces))


@event_type("conflict.resolved")
@dataclass(frozen=True, slots=True)
class ConflictResolved:
    """A conflict was settled. `strategy`: ask_user (a person chose `winner`), latest_wins,
    primary_wins, trust_wins, keep_both or auto_merge; `rule` names the automatic rule that decided
    it (trust_gap, age_gap, same_source, importance, profile), "" when an agent or admin chose. The loser, if any,
    is deprecated (or merged, for auto_merge) in the same append. Its CONFLICTS_WITH edge is archived
    by graph pruning 7 days later."""

    conflict_id: str
    namespace: str
    strategy: str = "ask_user"
    winner: str = ""
    loser: str = ""
    rule: str = ""
    memory_ids: tuple[str, ...] = ()
    winner_source: str = ""   # the sources of winner and loser: the learned profile of verdicts reads them
    loser_source: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "memory_ids", tuple(self.memory_ids))
