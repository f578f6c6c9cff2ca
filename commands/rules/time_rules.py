"""The time-driven rules of seed 3.2.1 / 3.3.1, as pure selections over memory rows at `now_ms`
(the scheduler appends what they select as events; nothing here reads the clock).

- Quality deadline: a memory noticed for low quality (`memory.quality_dropped`) that is still
  below 0.3 with >= 5 votes (one per agent) 7 days after the notice is deprecated (the next forget
  run moves it to the tombstones). A memory that recovered had its notice withdrawn (`memory.quality_recovered`).
- Stale rule: a stale memory (marked so, or decayed to the floor) that nobody recalled for 180
  days (counting from its latest version when it was never recalled) gets importance factor 0.1.

Rows are those of `projections.queries.live_memories.live_rows` (live memories, with `recall_count`
and `last_recalled_at` from the activity projection).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from projections.memories import scores
from projections.memories.scores import (
    QUALITY_DEADLINE_DAYS, QUALITY_DROP_BELOW, STALE_IMPORTANCE_FACTOR, STALE_UNRECALLED_DAYS, days_since, ms_of,
    scores_of,
)

#: The stored importance factor already at (or below) the stale factor: nothing left to do.
_EPS = 1e-6


@dataclass(frozen=True, slots=True)
class Due:
    memory_id: str
    namespace: str
    version: int
    reason: str


def quality_low(row: dict[str, Any]) -> bool:
    """`projections.memories.scores.quality_low` of a memory row."""
    return scores.quality_low(int(row.get("useful_count") or 0), int(row.get("not_useful_count") or 0),
                              float(row.get("quality_score") or 0.0))


def quality_deadline(rows: Iterable[dict[str, Any]], now_ms: int) -> list[Due]:
    out = []
    for r in sorted(rows, key=lambda r: r["id"]):
        notice = ms_of(r.get("quality_notice_at") or "")
        if not notice or r.get("status") == "deprecated" or not quality_low(r):
            continue
        if days_since(notice, now_ms) >= QUALITY_DEADLINE_DAYS:
            out.append(Due(r["id"], r["namespace"], int(r["version"]),
                           f"quality_low: still below {QUALITY_DROP_BELOW} {QUALITY_DEADLINE_DAYS} days "
                           "after the quality notice"))
    return out


def stale_unrecalled(rows: Iterable[dict[str, Any]], now_ms: int,
                     rates: Mapping[str, float] | None = None) -> list[Due]:
    """`rates`: the calibrated decay rates (appendix B's when absent)."""
    out = []
    for r in sorted(rows, key=lambda r: r["id"]):
        if r.get("tier") == "core":
            continue
        if float(r.get("importance") or 0.0) <= STALE_IMPORTANCE_FACTOR + _EPS:
            continue
        s = scores_of(r, now_ms, int(r.get("recall_count") or 0), r.get("last_recalled_at") or "", rates)
        if s.freshness == "stale" and s.idle_days >= STALE_UNRECALLED_DAYS:
            out.append(Due(r["id"], r["namespace"], int(r["version"]),
                           f"stale and not recalled for {STALE_UNRECALLED_DAYS} days"))
    return out
