"""The event catalogue: every event type, its payload dataclass, version and upcasters.

Each type is registered once. Decoding an older version runs the upcasters in order
(v1 -> v2 -> ...), so projectors only ever see the current payload shape.

Types registered so far:

- ``agent.registered`` — an agent was registered: its main and ephemeral namespaces and the
  sha256 of its API key (never the key itself). Rebuilds the key index on replay.
- ``memory.committed`` — a finished memory (L1/L2/L3 by ``kind``) was stored, with the id the
  handler generated and every field the agent gave or that was defaulted at the edge.
- ``memory.deleted`` — a memory was soft-deleted (``is_deleted``); ``version`` is its new version.
- ``memory.feedback`` / ``memory.deprecated`` / ``memory.corrected`` / ``memory.forgotten`` /
  ``memory.marked_stale`` / ``memory.quality_dropped`` / ``memory.quality_recovered`` /
  ``memory.downweighted`` / ``memory.validated`` — the learning side of a memory (feedback counts,
  new versions with provenance, forget-run evictions into the tombstones, notices and time-driven
  decisions of the reactions and the scheduler); documented on each class.
- ``recall.served`` — an audit record of one recall: the query, the namespaces searched, the
  result ids and their scores. Appended asynchronously after the response.
- ``synonym.added`` — the admin declared ``term`` and ``synonyms`` mutually synonymous (one
  symmetric group per addition) in ``namespace`` (``shared`` by default); lexical search expands
  queries with them. Validated at the edge (commands.parsing): non-empty, ≤ 64 chars, ≤ 32 synonyms.
- ``eval.golden_set_created`` — a golden query set for the evaluation framework (seed 6.1): its
  id, how it was generated (``generator``, ``seed``) and the queries, each with ``expected_ids``.
  Recorded as a decision, so a later LLM generator's output replays without calling the LLM.
- ``episode.committed`` / ``episode.distillation_started`` / ``episode.distilled`` — a raw episode (L0:
  a conversation or a task log, immutable, id scoped to its namespace) and its distillation into L1
  memories (decided by the distillation reaction; documented on each class).
- ``memory.merged`` / ``memory.unmerged`` — dedup (seed 6.2): a memory folded into another and the
  merge undone; ``conflict.detected`` / ``conflict.resolved`` — contradictions (seed 3.3.2).
- ``eval.completed`` — one evaluation run: the metrics (recall@k, precision@k, MRR, by tag, by
  agent), counts, the golden set id (empty for explicit queries) and ``top_k``; the per-query
  details are kept only when small.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

from events.envelope import Event, UnknownPayload
from events.errors import DecodeError, UnknownEventType

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
_PayloadClass = TypeVar("_PayloadClass", bound=type)


@dataclass(frozen=True, slots=True)
class EventType:
    name: str
    version: int
    payload: type
    upcasters: dict[int, Upcaster] = field(default_factory=dict)  # from-version -> fn
    fields: frozenset[str] = frozenset()   # the payload's field names (decoding drops other keys)


_BY_NAME: dict[str, EventType] = {}
_BY_CLASS: dict[type, EventType] = {}


def event_type(name: str, version: int = 1,
               upcasters: dict[int, Upcaster] | None = None) -> Callable[[_PayloadClass], _PayloadClass]:
    """Class decorator registering a payload dataclass under a dotted event name."""

    def register(cls: _PayloadClass) -> _PayloadClass:
        if name in _BY_NAME:
            raise ValueError(f"event type {name} registered twice")
        et = EventType(name, version, cls, dict(upcasters or {}), frozenset(f.name for f in dataclasses.fields(cls)))
        _BY_NAME[name] = et
        _BY_CLASS[cls] = et
        return cls

    return register


def lookup(name: str) -> EventType:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UnknownEventType(name) from None


def known_types() -> list[str]:
    return sorted(_BY_NAME)


def new_event(payload: Any, *, ns: str, agent: str, by: str = "", cause: str = "") -> Event:
    """Wrap a registered payload dataclass in an envelope (not yet placed in the log)."""
    et = _BY_CLASS.get(type(payload))
    if et is None:
        raise UnknownEventType(type(payload).__name__)
    return Event(type=et.name, data=payload, ns=ns, agent=agent, by=by, cause=cause, v=et.version)


def payload_from_dict(name: str, version: int, raw: dict[str, Any]) -> Any:
    """Build the current payload dataclass from a stored dict, upcasting old versions."""
    et = _BY_NAME.get(name)
    if et is None:
        return UnknownPayload(raw)
    data = raw
    v = version
    while v < et.version:
        up = et.upcasters.get(v)
        if up is None:
            raise DecodeError(f"no upcaster for {name} v{v}")
        data = up(data)
        v += 1
    if v > et.version:
        # Written by a newer build: keep it, projectors skip it.
        return UnknownPayload(raw)
    names = et.fields
    try:
        if names.issuperset(data):   # the usual case: nothing to drop
            return et.payload(**data)
        return et.payload(**{k: val for k, val in data.items() if k in names})
    except TypeError as exc:
        raise DecodeError(f"bad payload for {name}: {exc}") from exc


# --------------------------------------------------------------------------- payloads


@event_type("agent.registered")
@dataclass(frozen=True, slots=True)
class AgentRegistered:
    agent_id: str
    agent_type: str
    main_namespace: str
    ephemeral_namespace: str
    key_hash: str


@event_type("memory.committed")
@dataclass(frozen=True, slots=True)
class MemoryCommitted:
    memory_id: str
    content: str
    namespace: str
    category: str
    decay_class: str
    tier: str = "normal"
    kind: str = "L1"
    source: str = "agent_inference"
    tags: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    derived_from: str = ""
    extractor: str = ""                              # distilled: the extractor that wrote it ("" = an agent's commit)
    scores: tuple[tuple[str, float], ...] = ()       # distilled: (dimension, score) pairs, e.g. seed 3.1's IS..RU
    derived_from_memories: tuple[str, ...] = ()      # a pattern (L2): the memories it was mined from
    session_id: str = ""                             # an ephemeral memory's session (closing it forgets it)

    def __post_init__(self) -> None:
        # decoded JSON gives lists; keep payloads hashable and comparable
        object.__setattr__(self, "tags", tuple(self.tags))
        object.__setattr__(self, "depends_on", tuple(self.depends_on))
        object.__setattr__(self, "derived_from_memories", tuple(self.derived_from_memories))
        if self.scores or type(self.scores) is not tuple:
            object.__setattr__(self, "scores", tuple((str(k), float(v)) for k, v in self.scores))


@event_type("memory.deleted")
@dataclass(frozen=True, slots=True)
class MemoryDeleted:
    memory_id: str
    namespace: str
    version: int
    reason: str = ""


@event_type("memory.feedback")
@dataclass(frozen=True, slots=True)
class MemoryFeedback:
    """An agent found a memory useful / not useful (seed 2.7): the agent's vote (its latest one counts,
    once), the version stays. `observed_at`: the HLC stamp (`wall_ms:counter:node`) at which a LAN
    replica recorded a vote it buffered while its primary was unreachable; the vote registers order
    it by that stamp, not by when it reached the log ("" for a vote given to the primary: its own)."""

    memory_id: str
    namespace: str
    verdict: str            # useful | not_useful
    reason: str = ""
    observed_at: str = ""


@event_type("memory.deprecated")
@dataclass(frozen=True, slots=True)
class MemoryDeprecated:
    """Marked outdated (seed 3.3.1 rule 2: the next forget run moves it to the tombstones)."""

    memory_id: str
    namespace: str
    version: int
    reason: str = ""


@event_type("memory.corrected")
@dataclass(frozen=True, slots=True)
class MemoryCorrected:
    """New content for a memory, with why and from where (seed 3.3.3 provenance)."""

    memory_id: str
    namespace: str
    version: int
    content: str
    reason: str
    source: str = ""
    trigger: str = ""


@event_type("memory.forgotten")
@dataclass(frozen=True, slots=True)
class MemoryForgotten:
    """A forget run evicted the memory (seed 3.3.1); the tombstone keeps its content."""

    memory_id: str
    namespace: str
    version: int
    reason: str                  # quality_low | deprecated | lru | merged
    content_snapshot: str = ""
    merged_into: str = ""


@event_type("memory.marked_stale")
@dataclass(frozen=True, slots=True)
class MemoryMarkedStale:
    """The memory may be outdated (freshness=stale; a new version, the reason in its history):
    decided by a reaction (the correction cascade) or an admin, never by a projector."""

    memory_id: str
    namespace: str
    version: int
    reason: str
    caused_by: str = ""          # the memory whose change made this one stale, if any


@event_type("memory.quality_dropped")
@dataclass(frozen=True, slots=True)
class MemoryQualityDropped:
    """Notice (seed 3.2.1): quality < 0.3 with >= 5 feedback. The quality deadline counts 7 days
    from this event; the memory's version stays."""

    memory_id: str
    namespace: str
    quality_score: float
    feedback: int


@event_type("memory.quality_recovered")
@dataclass(frozen=True, slots=True)
class MemoryQualityRecovered:
    """Feedback lifted a noticed memory back to quality >= 0.3: its quality deadline is off."""

    memory_id: str
    namespace: str
    quality_score: float


@event_type("memory.downweighted")
@dataclass(frozen=True, slots=True)
class MemoryDownweighted:
    """A time-driven rule set the memory's importance factor (seed 3.3.1 rule 4: stale and not
    recalled for 180 days -> 0.1); decided by the scheduler (the event time is when)."""

    memory_id: str
    namespace: str
    factor: float
    reason: str


@event_type("memory.validated")
@dataclass(frozen=True, slots=True)
class MemoryValidated:
    """PassiveValidator (seed 3.3.4): a later commit confirmed this memory. `level` P1 (shared
    entities), P2 (shared keywords), P3 (content overlap >= 0.25) or P3_accumulated (three partial
    overlaps); `delta` is added to its confidence (capped at 1.0 when read)."""

    memory_id: str
    namespace: str
    level: str
    delta: float
    evidence_memory_id: str
    evidence: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "evidence", tuple(self.evidence))


@event_type("entities.extracted")
@dataclass(frozen=True, slots=True)
class EntitiesExtracted:
    """An LLM named the entities of one version of a memory (recorded, so replay never calls it);
    the graph adds them as entity nodes the memory REFERENCES. `entities` are (kind, name) pairs."""

    memory_id: str
    namespace: str
    version: int
    entities: tuple[tuple[str, str], ...]
    extractor: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "entities", tuple(tuple(e) for e in self.entities))


@event_type("graph.pruned")
@dataclass(frozen=True, slots=True)
class GraphPruned:
    """Graph maintenance decided by the scheduler (seed 2.5.5): nodes and edges to delete, edges to
    archive (weight 0) and redundant edges merged into a kept one (evidence added). PageRank is
    recomputed over the whole graph when this event is folded."""

    removed_nodes: tuple[str, ...] = ()
    removed_edges: tuple[str, ...] = ()
    archived_edges: tuple[str, ...] = ()
    merged_edges: tuple[tuple[str, str], ...] = ()   # (removed edge id, kept edge id)

    def __post_init__(self) -> None:
        object.__setattr__(self, "removed_nodes", tuple(self.removed_nodes))
        object.__setattr__(self, "removed_edges", tuple(self.removed_edges))
        object.__setattr__(self, "archived_edges", tuple(self.archived_edges))
        object.__setattr__(self, "merged_edges", tuple(tuple(p) for p in self.merged_edges))


@event_type("recall.served")
@dataclass(frozen=True, slots=True)
class RecallServed:
    """A recall was answered (the audit). `prefetch_ids` / `prefetch_weights`: the CO_OCCURS partners
    the answer listed (seed 6.7), pushed to the agent as `prefetch.push`; `trace_id`: the caller's
    decision trace (seed 6.3), which V-value propagation follows back to the memories served;
    `min_score`: the caller's (a miss, seed 3.2.2, is judged against it)."""

    query: str
    namespaces: tuple[str, ...]
    result_ids: tuple[str, ...]
    scores: tuple[float, ...]
    top_k: int = 10
    prefetch_ids: tuple[str, ...] = ()
    prefetch_weights: tuple[float, ...] = ()
    trace_id: str = ""
    min_score: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "namespaces", tuple(self.namespaces))
        object.__setattr__(self, "result_ids", tuple(self.result_ids))
        object.__setattr__(self, "scores", tuple(self.scores))
        object.__setattr__(self, "prefetch_ids", tuple(self.prefetch_ids))
        object.__setattr__(self, "prefetch_weights", tuple(self.prefetch_weights))


@event_type("synonym.added")
@dataclass(frozen=True, slots=True)
class SynonymAdded:
    term: str
    synonyms: tuple[str, ...]
    namespace: str = "shared"

    def __post_init__(self) -> None:
        object.__setattr__(self, "synonyms", tuple(self.synonyms))


# The episode events live in their own module; importing it registers them (and re-exports them here).
from events.episode_events import (  # noqa: E402
    EpisodeCommitted as EpisodeCommitted, EpisodeDistillationStarted as EpisodeDistillationStarted,
    EpisodeDistilled as EpisodeDistilled,
)
# The merge and conflict events live in their own module too (registered, and re-exported here).
from events.conflict_events import (  # noqa: E402
    ConflictDetected as ConflictDetected, ConflictResolved as ConflictResolved, MemoryMerged as MemoryMerged,
    MemoryUnmerged as MemoryUnmerged,
)
# The consolidation, trigger and notice events (registered, and re-exported here).
from events.consolidation_events import (  # noqa: E402
    ConsolidationCompleted as ConsolidationCompleted, ConsolidationStepDisabled as ConsolidationStepDisabled,
    ConsolidationStepEnabled as ConsolidationStepEnabled, NoticeRaised as NoticeRaised, TriggerFailed as TriggerFailed,
    TriggerFired as TriggerFired, TriggerPaused as TriggerPaused, TriggerResumed as TriggerResumed,
)
# The self-improvement events: V-values, skills, gaps, the world model (registered, and re-exported here).
from events.learning_events import (  # noqa: E402
    GapDetected as GapDetected, GapFilled as GapFilled, SkillCrystallized as SkillCrystallized,
    SkillTrialRecorded as SkillTrialRecorded, TraceRewarded as TraceRewarded, WorldModelUpdated as WorldModelUpdated,
)
# The LAN replica events (registered, and re-exported here).
from events.replica_events import ReplicaRegistered as ReplicaRegistered  # noqa: E402
# An agent's key rotated or revoked (registered, and re-exported here).
from events.agent_key_events import AgentKeyRevoked as AgentKeyRevoked, AgentKeyRotated as AgentKeyRotated  # noqa: E402
# The evaluation events: golden sets and their runs (registered, and re-exported here).
from events.eval_events import EvalCompleted as EvalCompleted, GoldenSetCreated as GoldenSetCreated  # noqa: E402
