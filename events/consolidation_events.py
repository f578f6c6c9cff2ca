"""The deep-consolidation and trigger events (seed 3.5 flow 5, 6.4; registered in `events.catalogue`,
which re-exports them). Everything time- or data-dependent a run decided is recorded here, so a
replay folds the same clusters, rates and trigger states without reading the clock."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from events.catalogue import event_type


@event_type("consolidation.completed")
@dataclass(frozen=True, slots=True)
class ConsolidationCompleted:
    """One deep-consolidation run (flow 5) and its report. `steps` holds one entry per step, in the
    order run: `{step, status, detail, error}` with status `ok`, `failed` (skipped; retried next run),
    `disabled` (three failures in a row), `not_run` (e.g. the backtrace without an LLM) or `skipped`
    (a step it needs failed). `clusters`: the topic clusters found, `{cluster_id, size, members}`
    (`members`: up to 50 ids closest to the centroid). `decay_rates`: the calibrated rate of each
    decay class (`{decay_class, base, rate, fitted, samples, status}`), folded into the rates
    decay uses from now on. `patterns`: the pattern memories written, `{memory_id, cluster_id,
    category, members}`. `report`: the summary figures. `at_ms`: the scheduler clock's now."""

    run_id: str
    at_ms: int
    trigger: str = "consolidation"
    steps: tuple[dict[str, Any], ...] = ()
    clusters: tuple[dict[str, Any], ...] = ()
    decay_rates: tuple[dict[str, Any], ...] = ()
    patterns: tuple[dict[str, Any], ...] = ()
    report: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        for name in ("steps", "clusters", "decay_rates", "patterns"):
            object.__setattr__(self, name, tuple(getattr(self, name)))


@event_type("consolidation.step_disabled")
@dataclass(frozen=True, slots=True)
class ConsolidationStepDisabled:
    """A consolidation step failed `failures` runs in a row and is disabled (flow 5) until an admin
    enables it again (`consolidation.step_enabled`)."""

    step: str
    failures: int
    error: str = ""


@event_type("consolidation.step_enabled")
@dataclass(frozen=True, slots=True)
class ConsolidationStepEnabled:
    """A disabled consolidation step enabled again by an admin; its failure count starts over."""

    step: str


@event_type("trigger.fired")
@dataclass(frozen=True, slots=True)
class TriggerFired:
    """A trigger's condition held outside its cooldown and its action ran (seed 6.4). `at_ms` (the
    scheduler clock) starts the cooldown; `reason` is the condition as it held; `marks` what the
    next evaluation counts from (e.g. `through`: the last log position a sweep covered,
    `distilled`: the distilled-memory count at this firing); `result` the action's summary."""

    name: str
    at_ms: int
    urgency: float = 0.0
    reason: str = ""
    marks: dict[str, Any] | None = None
    result: dict[str, Any] | None = None


@event_type("trigger.failed")
@dataclass(frozen=True, slots=True)
class TriggerFailed:
    """A trigger's action raised; the cooldown starts all the same. `failures` counts the failures in
    a row (three pause the trigger: `trigger.paused` by `system`)."""

    name: str
    at_ms: int
    error: str = ""
    failures: int = 1


@event_type("trigger.paused")
@dataclass(frozen=True, slots=True)
class TriggerPaused:
    """A trigger stopped (its kill-switch): by an admin, or by the system after three failures."""

    name: str
    reason: str = ""


@event_type("trigger.resumed")
@dataclass(frozen=True, slots=True)
class TriggerResumed:
    """A paused trigger running again; its failure count starts over."""

    name: str


@event_type("notice.raised")
@dataclass(frozen=True, slots=True)
class NoticeRaised:
    """Something a person should know (a trigger or a consolidation step disabled by failures): the
    WebSocket hub pushes these once it exists; until then they are in the log and the server log."""

    kind: str               # trigger_disabled | step_disabled
    subject: str            # the trigger's or the step's name
    message: str
