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
