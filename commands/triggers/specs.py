"""The eight conditional triggers (seed 6.4) and when each is due, as pure functions of what the
trigger service read (`Inputs`) at the scheduler clock's now.

| name | condition | cooldown | action |
|---|---|---|---|
| distill | the LLM distillation queue holds >= 10 episodes (its batch size), or its oldest waited 5 min | 1 min | distil a batch |
| merge | memories committed since the last sweep (merge on) | 10 min | merge sweep |
| prune | 24 h since the last prune | 24 h | graph prune + PageRank |
| decay | none (every cooldown) | 6 h | quality deadline, stale rule, forget run |
| backtrace (回溯) | > 50 memories distilled since the last backtrace | 24 h | distillation quality backtrace |
| conflict | memories naming an entity written since the last sweep | 1 min | conflict sweep |
| gap | knowledge gaps of type B or C opened since its last run (3 misses on a topic open one) | 30 min | repair them, verified by their recalls |
| consolidation | (> 50 distilled since the last run and 24 h since it) or 48 h since it | 24 h | deep consolidation |

Seed 6.4's table gives consolidation a 48 h cooldown while flow 5 runs it after 24 h once 50
memories were distilled ("at most once a day"); the flow's condition with a 24 h cooldown keeps
both. A trigger that never fired counts its hours from the start of the log. Urgency is in [0, 1]:
how far past its condition a trigger is (e.g. the queue over 10, the hours over 48); the list is
sorted by it, and due triggers fire in that order. A trigger is due when its condition holds, its
cooldown (from its last attempt, failed or not) has passed, it is not paused and not disabled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

HOUR_S = 3600
DISTILL_QUEUE = 10
DISTILL_WAIT_S = 300
NEW_DISTILLED = 50
CONFLICT_WRITES_FULL = 10
MERGE_WRITES_FULL = 50


@dataclass(frozen=True, slots=True)
class TriggerSpec:
    name: str
    condition: str
    cooldown_s: int
    action: str


SPECS: tuple[TriggerSpec, ...] = (
    TriggerSpec("distill", f"the LLM distillation queue holds >= {DISTILL_QUEUE} episodes, or its oldest waited "
                f"{DISTILL_WAIT_S // 60} min", 60, "distil the queued episodes in batches"),
    TriggerSpec("merge", "memories were committed since the last merge sweep", 600,
                "merge duplicates and replacements among them (the pair judge)"),
    TriggerSpec("prune", "24 h since the last prune", 24 * HOUR_S, "prune the knowledge graph, recompute PageRank"),
    TriggerSpec("decay", "none: runs every cooldown", 6 * HOUR_S,
                "the quality deadline, the stale rule and a forget run"),
    TriggerSpec("backtrace", f"> {NEW_DISTILLED} memories distilled since the last backtrace", 24 * HOUR_S,
                "distillation quality backtrace (回溯; needs an LLM)"),
    TriggerSpec("conflict", "memories naming an entity were written since the last conflict sweep", 60,
                "compare them with their neighbours (conflicts the commit check could not see)"),
    TriggerSpec("gap", "knowledge gaps of type B or C opened since the last run (3 recall misses on a topic "
                "within 24 h open and classify one)", 30 * 60,
                "repair them: a synonym (B) or a wider search (C), verified by running their recalls again"),
    TriggerSpec("consolidation", f"(> {NEW_DISTILLED} memories distilled since the last run and 24 h since it) "
                "or 48 h since it", 24 * HOUR_S, "deep consolidation (flow 5)"),
)
BY_NAME: dict[str, TriggerSpec] = {s.name: s for s in SPECS}


@dataclass(frozen=True, slots=True)
class Inputs:
    """What the conditions read, gathered by `commands.triggers.service` at `now_ms`."""

    now_ms: int
    origin_ms: int                                         # the log's first event (never fired: counted from it)
    state: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)   # projection rows by trigger name
    distilled: int = 0                                     # memories distilled so far
    distill_queue: int = 0                                 # episodes waiting for the LLM
    distill_oldest_ms: int = 0                             # when the oldest of them was queued
    distill_batch: int = DISTILL_QUEUE                     # the queue's batch size (ZHIYI_DISTILL_BATCH_SIZE)
    distill_wait_s: float = DISTILL_WAIT_S                 # ... and longest wait
    writes: Mapping[str, int] = field(default_factory=dict)  # sweep triggers: writes since their mark
    disabled: Mapping[str, str] = field(default_factory=dict)  # name -> why it cannot run here


@dataclass(frozen=True, slots=True)
class Evaluation:
    name: str
    holds: bool          # the condition holds
    due: bool            # ... and nothing holds it back
    urgency: float
    reason: str          # the condition as it holds (or why not)
    cooling_until_ms: int = 0
    disabled: str = ""


def _hours_since(inputs: Inputs, name: str) -> float:
    last = int((inputs.state.get(name) or {}).get("last_fired_ms") or 0)
    return max(0.0, (inputs.now_ms - (last or inputs.origin_ms)) / 3_600_000)


def _distilled_since(inputs: Inputs, name: str) -> int:
    marks = (inputs.state.get(name) or {}).get("marks") or {}
    return max(0, inputs.distilled - int(marks.get("distilled", 0)))


def _distill(i: Inputs) -> tuple[bool, float, str]:
    waited_s = (i.now_ms - i.distill_oldest_ms) / 1000 if i.distill_queue else 0.0
    holds = i.distill_queue >= i.distill_batch or (i.distill_queue > 0 and waited_s >= i.distill_wait_s)
    return holds, max(i.distill_queue / i.distill_batch, waited_s / i.distill_wait_s), \
        f"{i.distill_queue} episodes queued, the oldest for {waited_s:.0f} s"


def _sweep(name: str, full: int) -> Callable[[Inputs], tuple[bool, float, str]]:
    def condition(i: Inputs) -> tuple[bool, float, str]:
        n = int(i.writes.get(name, 0))
        return n > 0, n / full, f"{n} memories since the last sweep"
    return condition


def _every(hours: float, name: str) -> Callable[[Inputs], tuple[bool, float, str]]:
    def condition(i: Inputs) -> tuple[bool, float, str]:
        h = _hours_since(i, name)
        return h >= hours, h / hours, f"{h:.1f} h since the last run"
    return condition


def _backtrace(i: Inputs) -> tuple[bool, float, str]:
    n = _distilled_since(i, "backtrace")
    return n > NEW_DISTILLED, n / NEW_DISTILLED, f"{n} memories distilled since the last backtrace"


def _consolidation(i: Inputs) -> tuple[bool, float, str]:
    n, h = _distilled_since(i, "consolidation"), _hours_since(i, "consolidation")
    holds = (n > NEW_DISTILLED and h >= 24) or h >= 48
    return holds, max(h / 48, n / NEW_DISTILLED if h >= 24 else 0.0), \
        f"{n} memories distilled and {h:.1f} h since the last run"


def _gaps(i: Inputs) -> tuple[bool, float, str]:
    n = int(i.writes.get("gap", 0))
    return n > 0, n / 3, f"{n} knowledge gaps of type B or C to repair"


CONDITIONS: dict[str, Callable[[Inputs], tuple[bool, float, str]]] = {
    "distill": _distill, "merge": _sweep("merge", MERGE_WRITES_FULL), "prune": _every(24, "prune"),
    "decay": _every(6, "decay"), "backtrace": _backtrace, "conflict": _sweep("conflict", CONFLICT_WRITES_FULL),
    "gap": _gaps, "consolidation": _consolidation,
}


def evaluate(spec: TriggerSpec, inputs: Inputs) -> Evaluation:
    """Is `spec` due at `inputs.now_ms`, and how urgent is it?"""
    state = inputs.state.get(spec.name) or {}
    disabled = inputs.disabled.get(spec.name, "")
    holds, urgency, reason = CONDITIONS[spec.name](inputs)
    urgency = round(min(1.0, max(0.0, urgency)), 4) if not disabled else 0.0
    last_attempt = int(state.get("last_attempt_ms") or 0)
    cooling_until = last_attempt + spec.cooldown_s * 1000 if last_attempt else 0
    due = holds and not disabled and not state.get("paused") and inputs.now_ms >= cooling_until
    return Evaluation(spec.name, holds and not disabled, due, urgency, disabled or reason,
                      cooling_until if cooling_until > inputs.now_ms else 0, disabled)


def evaluate_all(inputs: Inputs) -> list[Evaluation]:
    """Every trigger, urgency descending (then name)."""
    return sorted((evaluate(s, inputs) for s in SPECS), key=lambda e: (-e.urgency, e.name))
