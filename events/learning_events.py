"""The self-improvement events (seed 6.3 V-values, 6.5 skills; registered in `events.catalogue`,
which re-exports them). What was computed from the read models at decision time (the values of a
rewarded trace, a skill's evidence) is recorded, so a replay folds it without deciding again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from events.catalogue import event_type


@event_type("trace.rewarded")
@dataclass(frozen=True, slots=True)
class TraceRewarded:
    """A decision trace ended with `reward` (seed 6.3, `POST /api/v1/trace/vprop`); its value was
    propagated back along the recalls it served (`commands.learning.values`). `values`: one entry per
    memory, `{memory_id, v, alpha, step}` (the V it now has, the alpha of its useful feedback then,
    the trace step it was valued at). `at_ms`: when (the V-value decay counts from it)."""

    trace_id: str
    reward: float
    at_ms: int
    steps: int = 0
    values: tuple[dict[str, Any], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", tuple(self.values))


@event_type("skill.crystallized")
@dataclass(frozen=True, slots=True)
class SkillCrystallized:
    """An L2 pattern became a skill (seed 6.5): it had `successes` useful feedbacks (>= 3), no open
    conflict and was not deprecated. `successes` / `failures` (its useful / not-useful votes then) are
    its first trials: the skill's Beta posterior starts at (1 + successes, 1 + failures)."""

    name: str
    memory_id: str
    namespace: str
    content: str
    successes: int
    failures: int = 0
    memory_type: str = "skill"


@event_type("skill.trial_recorded")
@dataclass(frozen=True, slots=True)
class SkillTrialRecorded:
    """One trial of a skill (seed 6.5, `POST /api/v1/skills/{name}/trial`): it succeeded or not."""

    name: str
    success: bool


@event_type("gap.detected")
@dataclass(frozen=True, slots=True)
class GapDetected:
    """A knowledge gap (seed 3.2.2, flow 3): `agent` missed three times within 24 h on one topic (queries
    with cosine >= 0.8 to its first) with no hit between. `gap_type` A (nothing near), B (a close memory
    shares no term with the queries: a synonym mismatch), C (a memory of the agent's default scope
    answers, but the recall's narrowing left it out) or D (close but not enough: fragmented), decided
    by `commands.learning.gaps.classify`; `evidence` holds the figures it decided on. `queries`,
    `namespaces`, `min_scores`: the missed recalls, for the repair to run them again."""

    gap_id: str
    agent: str
    query: str
    gap_type: str
    queries: tuple[str, ...] = ()
    namespaces: tuple[tuple[str, ...], ...] = ()
    min_scores: tuple[float | None, ...] = ()
    suggestion: str = ""
    evidence: dict[str, Any] | None = None
    at_ms: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "queries", tuple(self.queries))
        object.__setattr__(self, "namespaces", tuple(tuple(n) for n in self.namespaces))
        object.__setattr__(self, "min_scores", tuple(self.min_scores))


@event_type("gap.filled")
@dataclass(frozen=True, slots=True)
class GapFilled:
    """A knowledge gap closed (flow 3). `repair`: `synonym` (a synonym was added and the gap's recalls
    now find an answer), `retry` (the recalls find one in the agent's default scope with a wider
    search), or `answered` (the agent's own later recall on the topic found one). `filled_count`: the
    gap's recalls that find an answer now; `memory_ids`: what they found."""

    gap_id: str
    repair: str
    filled_count: int = 0
    memory_ids: tuple[str, ...] = ()
    detail: str = ""
    agent: str = ""          # the gap's (who is told)
    query: str = ""          # the gap's first query

    def __post_init__(self) -> None:
        object.__setattr__(self, "memory_ids", tuple(self.memory_ids))


@event_type("worldmodel.updated")
@dataclass(frozen=True, slots=True)
class WorldModelUpdated:
    """The L3 world model changed (seed 6.6), as `commands.learning.worldmodel` derived it when `reason`
    (the event type that prompted it) arrived: `entities` and `interactions` from the knowledge graph,
    `constraints` (`{text, hard, memory_id}`) from the live constraint memories. The whole model, so a
    reader needs only the latest."""

    entities: tuple[dict[str, Any], ...] = ()
    interactions: tuple[dict[str, Any], ...] = ()
    constraints: tuple[dict[str, Any], ...] = ()
    reason: str = ""
    at_ms: int = 0

    def __post_init__(self) -> None:
        for name in ("entities", "interactions", "constraints"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
