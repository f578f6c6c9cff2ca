"""Which memories a forget run evicts (seed 3.3.1), chosen from the live memory rows.

In this order, each memory at most once (the first rule that takes it names the reason):

1. ``quality_low`` — quality_score < 0.2 with at least 5 votes (agents: each agent's latest vote
   counts once, so one agent cannot get a memory forgotten);
2. ``deprecated`` — marked deprecated (POST /feedback/deprecate);
3. ``lru`` — a namespace still holding more than ``capacity`` live memories loses the lowest
   recall_count first, ties by the oldest last_recalled_at (never recalled first), then the oldest
   commit, then id. tier=core memories are never evicted for capacity. Well-connected memories are
   protected (plan E4.3): a memory whose knowledge-graph degree is above
   :data:`PROTECTED_DEGREE` is evicted only after every candidate of degree <= 5 in its namespace.

Pure over rows (`projections.queries.live_memories.live_rows` reads them), so the same projection
state always gives the same plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

QUALITY_LOW_BELOW = 0.2
MIN_FEEDBACK = 5
DEFAULT_CAPACITY = 10_000
PROTECTED_DEGREE = 5


@dataclass(frozen=True, slots=True)
class ForgetCandidate:
    memory_id: str
    namespace: str
    version: int
    reason: str
    content: str


def over_capacity(rows: list[dict[str, Any]], capacity: int) -> list[str]:
    """Ids of the memories an LRU pass could evict: those of namespaces above `capacity` (their
    degrees are what `choose` needs)."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["namespace"]] = counts.get(row["namespace"], 0) + 1
    return sorted(r["id"] for r in rows if counts[r["namespace"]] > capacity and r.get("tier") != "core")


def choose(rows: list[dict[str, Any]], capacity: int = DEFAULT_CAPACITY,
           degrees: Mapping[str, int] | None = None) -> list[ForgetCandidate]:
    """`degrees`: graph degree by memory id (absent: 0), for the E4.3 protection."""
    degree = degrees or {}
    out: list[ForgetCandidate] = []
    taken: set[str] = set()

    def take(row: dict[str, Any], reason: str) -> None:
        taken.add(row["id"])
        out.append(ForgetCandidate(row["id"], row["namespace"], int(row["version"]), reason, row["content"]))

    ordered = sorted(rows, key=lambda r: r["id"])
    for row in ordered:
        feedback = int(row["useful_count"]) + int(row["not_useful_count"])
        if feedback >= MIN_FEEDBACK and float(row["quality_score"]) < QUALITY_LOW_BELOW:
            take(row, "quality_low")
    for row in ordered:
        if row["id"] not in taken and row.get("status") == "deprecated":
            take(row, "deprecated")
    by_ns: dict[str, list[dict[str, Any]]] = {}
    for row in ordered:
        if row["id"] not in taken:
            by_ns.setdefault(row["namespace"], []).append(row)
    for ns in sorted(by_ns):
        live = by_ns[ns]
        excess = len(live) - capacity
        if excess <= 0:
            continue
        evictable = sorted((r for r in live if r.get("tier") != "core"),
                           key=lambda r: (degree.get(r["id"], 0) > PROTECTED_DEGREE, int(r["recall_count"]),
                                          r["last_recalled_at"] or "", r["timestamp"], r["id"]))
        for row in evictable[:excess]:
            take(row, "lru")
    return out
