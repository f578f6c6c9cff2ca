"""Which parts of the knowledge graph a prune removes (seed 2.5.5), chosen at `now_ms` from the
graph projection; the scheduler appends the choice as one `graph.pruned` event.

- isolated nodes: no edge at all, not touched for 14 days, type != skill (memory nodes are
  never pruned here: a memory leaves the graph when it is deleted or forgotten);
- low-weight edges: weight < 0.15 with a single piece of evidence, older than 30 days;
- redundant edges: several edges of one symmetric type (CO_OCCURS, CONFLICTS_WITH) between the same
  two nodes, in either direction: the one with the most evidence is kept and gets the others' evidence;
- CONFLICTS_WITH archival: 7 days after its conflict was resolved the edge's weight goes to 0; 30
  days after that it is deleted;
- CO_OCCURS decay (seed 2.5.3): weight < 0.3 and no co-recall for 14 days -> weight 0; an edge at 0
  is deleted by the next prune.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from events.hlc import iso_from_ms
from projections.graph.cooccurs import COOCCURS_ID

DAY_MS = 86_400_000
ISOLATED_AFTER_DAYS = 14          # appendix B graph.prune.isolated_after_days
LOW_WEIGHT = 0.15                 # graph.prune.low_weight_threshold
LOW_WEIGHT_AFTER_DAYS = 30
CONFLICT_ARCHIVE_AFTER_DAYS = 7
CONFLICT_DELETE_AFTER_DAYS = 30
SYMMETRIC = ("CO_OCCURS", "CONFLICTS_WITH")
CO_OCCURS_WEAK = 0.3
CO_OCCURS_IDLE_DAYS = 14
MAX_PER_PRUNE = 5000              # per kind; the next prune takes the rest


@dataclass(frozen=True, slots=True)
class PrunePlan:
    removed_nodes: tuple[str, ...] = ()
    removed_edges: tuple[str, ...] = ()
    archived_edges: tuple[str, ...] = ()
    merged_edges: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.removed_nodes or self.removed_edges or self.archived_edges or self.merged_edges)


def _before(now_ms: int, days: int) -> str:
    return iso_from_ms(now_ms - days * DAY_MS)


def plan_prune(conn: sqlite3.Connection, now_ms: int) -> PrunePlan:
    isolated = tuple(r[0] for r in conn.execute(
        "SELECT n.id FROM graph_nodes n WHERE n.type NOT IN ('skill', 'fact', 'decision') "
        "AND n.last_updated_at < ? AND NOT EXISTS (SELECT 1 FROM graph_edges e WHERE e.source_id = n.id) "
        "AND NOT EXISTS (SELECT 1 FROM graph_edges e WHERE e.target_id = n.id) ORDER BY n.id LIMIT ?",
        (_before(now_ms, ISOLATED_AFTER_DAYS), MAX_PER_PRUNE)))
    archived_conflicts = conn.execute(
        "SELECT c.edge_id, c.resolved_at FROM graph_conflicts c JOIN graph_links e ON e.id = c.edge_id "
        "WHERE c.resolved_at IS NOT NULL AND c.resolved_at < ? ORDER BY c.edge_id LIMIT ?",
        (_before(now_ms, CONFLICT_ARCHIVE_AFTER_DAYS), MAX_PER_PRUNE)).fetchall()
    delete_before = _before(now_ms, CONFLICT_ARCHIVE_AFTER_DAYS + CONFLICT_DELETE_AFTER_DAYS)
    conflict_deleted = {e for e, at in archived_conflicts if at < delete_before}
    weights = dict(conn.execute(
        f"SELECT id, weight FROM graph_links WHERE id IN ({','.join('?' * len(archived_conflicts))})",
        [e for e, _ in archived_conflicts]).fetchall()) if archived_conflicts else {}
    archived = tuple(e for e, _ in archived_conflicts if e not in conflict_deleted and weights.get(e, 0) > 0)
    weak_co = tuple(r[0] for r in conn.execute(
        f"SELECT {COOCCURS_ID} AS id FROM graph_cooccurs WHERE weight > 0 AND weight < ? AND last_at < ? "
        "ORDER BY id LIMIT ?", (CO_OCCURS_WEAK, _before(now_ms, CO_OCCURS_IDLE_DAYS), MAX_PER_PRUNE)))
    dead_co = {r[0] for r in conn.execute(
        f"SELECT {COOCCURS_ID} AS id FROM graph_cooccurs WHERE weight <= 0 ORDER BY id LIMIT ?", (MAX_PER_PRUNE,))}
    low = [r[0] for r in conn.execute(
        "SELECT id FROM graph_edges WHERE weight < ? AND evidence_count <= 1 AND created_at < ? "
        "AND relation_type != 'CONFLICTS_WITH' ORDER BY id LIMIT ?",
        (LOW_WEIGHT, _before(now_ms, LOW_WEIGHT_AFTER_DAYS), MAX_PER_PRUNE))]
    merged: list[tuple[str, str]] = []
    groups: dict[tuple[str, str, str], list[tuple[int, str]]] = {}
    for eid, src, dst, rel, evidence in conn.execute(
            "SELECT id, source_id, target_id, relation_type, evidence_count FROM graph_edges "
            f"WHERE relation_type IN ({','.join('?' * len(SYMMETRIC))}) ORDER BY id", SYMMETRIC):
        groups.setdefault((rel, min(src, dst), max(src, dst)), []).append((int(evidence), eid))
    for members in groups.values():
        if len(members) > 1:
            members.sort(key=lambda m: (-m[0], m[1]))
            merged += [(eid, members[0][1]) for _, eid in members[1:]]
    gone = set(low) | conflict_deleted | dead_co
    return PrunePlan(removed_nodes=isolated, removed_edges=tuple(sorted(gone)),
                     archived_edges=tuple(sorted({*archived, *(e for e in weak_co if e not in gone)})), merged_edges=tuple(m for m in merged[:MAX_PER_PRUNE]
                                                                 if m[0] not in gone and m[1] not in gone))
