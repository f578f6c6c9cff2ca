"""Which memories a forget run evicts (seed 3.3.1), read from the memories projection.

In this order, each memory at most once (the first rule that takes it names the reason):

1. ``quality_low`` — quality_score < 0.2 with at least 5 votes (agents: each agent's latest vote
   counts once, so one agent cannot get a memory forgotten);
2. ``deprecated`` — marked deprecated (POST /feedback/deprecate);
3. ``lru`` — a namespace still holding more than ``capacity`` live memories loses the lowest
   recall_count first, ties by the oldest last_recalled_at (never recalled first), then the oldest
   commit, then id. tier=core memories are never evicted for capacity.

Pure over rows, so the same projection state always gives the same plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from projections.core.lance import sql_quote

QUALITY_LOW_BELOW = 0.2
MIN_FEEDBACK = 5
DEFAULT_CAPACITY = 10_000
COLUMNS = ["id", "namespace", "version", "content", "quality_score", "useful_count", "not_useful_count", "status",
           "timestamp", "tier", "decay_class", "freshness", "importance", "volatile_flag", "updated_at",
           "quality_notice_at", "source", "confidence"]


@dataclass(frozen=True, slots=True)
class ForgetCandidate:
    memory_id: str
    namespace: str
    version: int
    reason: str
    content: str


def choose(rows: list[dict[str, Any]], capacity: int = DEFAULT_CAPACITY) -> list[ForgetCandidate]:
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
                           key=lambda r: (int(r["recall_count"]), r["last_recalled_at"] or "", r["timestamp"], r["id"]))
        for row in evictable[:excess]:
            take(row, "lru")
    return out


def live_rows(reader: Any, activity: Any, namespace: str | None = None) -> list[dict[str, Any]]:
    """The live memories (all namespaces, or one) with the columns `choose` needs, their recall
    counts from the activity projection (sync: run in a thread)."""
    table = reader.table()
    if table is None:
        return []
    where = "is_deleted = false" + (f" AND namespace = {sql_quote(namespace)}" if namespace else "")
    rows = table.search().where(where).select(COLUMNS).limit(None).to_arrow().to_pylist()
    recalls = activity.recalls([r["id"] for r in rows])
    for r in rows:
        r["recall_count"], r["last_recalled_at"] = recalls.get(r["id"], (0, ""))
    return rows
