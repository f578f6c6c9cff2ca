"""The seven self-metrics of seed 3.2.3 ("the system's own quality panel, not an ops panel"), each a
pure function of one day's counts (`projections.metrics.reader`), with its health band:

| metric | value | healthy | alert |
|---|---|---|---|
| useful_rate | useful / (useful + not_useful) votes | > 0.7 | fell 7 days in a row |
| hit_rate | recalls with a result (>= min_score) / recalls | > 0.8 | < 0.5 |
| gap_closure | closed gaps / detected gaps, cumulative over the window up to the day | -> 1.0 | 0 for 14 days |
| correction_propagation | dependants marked stale / DEPENDS_ON dependants of corrected memories | > 0.5 | - |
| junk_elimination | memories forgotten that day | 2-5 per day | > 20, or 0 |
| loss_rate | lossy / sampled memories of the distillation backtrace | < 0.15 | > 0.3 |
| auto_resolve_rate | conflicts resolved by a rule or the model / conflicts resolved | rising | - |

A metric with no input that day is `null` with a `reason`. Status: `healthy`, `warning` (outside the
healthy band), `alert` (the alert condition), or `no_data`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

Counts = Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Definition:
    name: str
    definition: str
    healthy: str
    alert: str
    value: Callable[[Counts], float | None]
    no_data: str


def _ratio(num: str, den: str) -> Callable[[Counts], float | None]:
    def value(c: Counts) -> float | None:
        d = c.get(den, 0)
        return round(c.get(num, 0) / d, 4) if d else None
    return value


def _hits(c: Counts) -> float | None:
    recalls = c.get("recalls", 0)
    return round((recalls - c.get("recall_misses", 0)) / recalls, 4) if recalls else None


def _useful(c: Counts) -> float | None:
    votes = c.get("useful", 0) + c.get("not_useful", 0)
    return round(c.get("useful", 0) / votes, 4) if votes else None


def _forgotten(c: Counts) -> float | None:
    return float(c.get("forgotten", 0))


def _with_running_gaps(days: list[str], daily: Mapping[str, Counts]) -> dict[str, Counts]:
    """Each day's counts plus the gaps detected and closed from the first of `days` through it."""
    out: dict[str, Counts] = dict(daily)
    detected = closed = 0
    for day in days:
        c = daily.get(day, {})
        detected += c.get("gaps_detected", 0)
        closed += c.get("gaps_closed", 0)
        out[day] = {**c, "gaps_detected_so_far": detected, "gaps_closed_so_far": closed}
    return out


DEFINITIONS: tuple[Definition, ...] = (
    Definition("useful_rate", "useful / (useful + not_useful) feedback votes of the day", "> 0.7",
               "fell 7 days in a row", _useful, "no feedback that day"),
    Definition("hit_rate", "recalls with at least one result at or above min_score / recalls", "> 0.8", "< 0.5",
               _hits, "no recall that day"),
    Definition("gap_closure", "knowledge gaps closed / gaps detected, from the window's first day to this one",
               "-> 1.0", "0 for 14 days", _ratio("gaps_closed_so_far", "gaps_detected_so_far"),
               "no knowledge gap detected in the window yet"),
    Definition("correction_propagation", "dependants marked stale by the cascade / DEPENDS_ON dependants of the "
               "memories corrected that day", "> 0.5", "-", _ratio("cascades", "dependants_of_corrected"),
               "no corrected memory had dependants that day"),
    Definition("junk_elimination", "memories forgotten that day", "2-5 per day", "> 20, or 0", _forgotten, ""),
    Definition("loss_rate", "lossy / sampled memories of the distillation quality backtrace", "< 0.15", "> 0.3",
               _ratio("backtrace_lossy", "backtrace_sampled"), "no backtrace ran that day (it needs an LLM)"),
    Definition("auto_resolve_rate", "conflicts resolved by an automatic rule or the model / conflicts resolved",
               "rising", "-", _ratio("conflicts_auto_resolved", "conflicts_resolved"), "no conflict resolved that day"),
)


def _status(name: str, value: float | None, trend: list[float | None]) -> str:
    if value is None:
        return "no_data"
    if name == "useful_rate":
        last = [v for v in trend[-8:] if v is not None]
        falling = len(last) == 8 and all(b < a for a, b in zip(last, last[1:]))
        return "alert" if falling else "healthy" if value > 0.7 else "warning"
    if name == "hit_rate":
        return "alert" if value < 0.5 else "healthy" if value > 0.8 else "warning"
    if name == "correction_propagation":
        return "healthy" if value > 0.5 else "warning"
    if name == "junk_elimination":
        return "alert" if value > 20 or value == 0 else "healthy" if 2 <= value <= 5 else "warning"
    if name == "loss_rate":
        return "alert" if value > 0.3 else "healthy" if value < 0.15 else "warning"
    if name == "gap_closure":
        recent = trend[-14:]
        return "alert" if len(recent) == 14 and all(v == 0 for v in recent) else "healthy" if value >= 0.8 \
            else "warning"
    if name == "auto_resolve_rate":
        earlier = [v for v in trend[:-1] if v is not None]
        return "healthy" if not earlier or value >= earlier[-1] else "warning"
    return "healthy"


def self_metrics(days: list[str], daily: Mapping[str, Counts]) -> list[dict[str, Any]]:
    """Each metric on the last of `days` (ascending ISO dates) with its band, status and the trend
    over all of `days`."""
    daily = _with_running_gaps(days, daily)
    out = []
    for m in DEFINITIONS:
        trend = [m.value(daily.get(day, {})) for day in days]
        value = trend[-1] if trend else None
        entry: dict[str, Any] = {"name": m.name, "value": value, "definition": m.definition, "healthy": m.healthy,
                                 "alert": m.alert, "status": _status(m.name, value, trend),
                                 "trend": [{"day": day, "value": v} for day, v in zip(days, trend)]}
        if value is None:
            entry["reason"] = m.no_data
        out.append(entry)
    return out
