"""Prefetch partners in memory: the strong CO_OCCURS edges (weight > PREFETCH_MIN_WEIGHT) of the
knowledge graph, held by the gateway for the `prefetch` list every recall answers with.

Asking SQLite for them on every recall cost 0.2-0.4 ms of the event loop at 100k memories (six
index range scans, on a page cache the projector's commits keep invalidating). The graph
projector logs every write of a CO_OCCURS edge (`cooccurs_log`: see
`projections.graph.cooccurs`); this view replays that log from the last change it saw, in a worker thread,
at most every `max_age_s`, and reloads the edges when it fell behind the kept log or the
projection was rebuilt. A recall may see partners that much older than the graph, which itself
trails the recalls it counts; until the first load (or over a graph without the log) it answers
None and the caller asks SQLite (`GraphReader.prefetch`).
"""

from __future__ import annotations

import sqlite3
import sys

from projections.serving.followers import ProjectionFollower
from projections.graph.reader import PREFETCH_MIN_WEIGHT, GraphReader, Neighbour

Edge = tuple[str, str, float, str]     # source, target, weight (-1: deleted), edge namespace
#: the log's first and last change numbers, two B-tree seeks (SQLite answers `SELECT MIN(x), MAX(x)` in
#: one query by scanning the whole table: 16 ms for the 200k entries kept, four times a second)
BOUNDS_SQL = "SELECT (SELECT MIN(change) FROM cooccurs_log), (SELECT MAX(change) FROM cooccurs_log)"


def read_changes(reader: GraphReader, since: int, min_weight: float) -> tuple[bool, list[Edge], int] | None:
    """(full, edges, latest change) in one snapshot: the logged writes after `since`, or, when
    `since` < 0, the log no longer reaches back to it, or it went back (a rebuilt graph), every
    edge above `min_weight` (full=True). None without a database or its log."""
    def run(conn: sqlite3.Connection) -> tuple[bool, list[Edge], int]:
        conn.execute("BEGIN")
        try:
            lowest, latest = conn.execute(BOUNDS_SQL).fetchone()
            latest = int(latest or 0)
            if since >= 0 and latest >= since and (lowest is None or lowest <= since + 1):
                return False, conn.execute("SELECT source_id, target_id, weight, namespace FROM cooccurs_log "
                                           "WHERE change > ? ORDER BY change", (since,)).fetchall(), latest
            return True, conn.execute("SELECT source_id, target_id, weight, namespace FROM graph_cooccurs "
                                      "WHERE weight > ?", (min_weight,)).fetchall(), latest
        finally:
            conn.execute("COMMIT")

    return reader.with_connection(run, None)


class PrefetchPartners(ProjectionFollower):
    """See the module doc. `prefetch` has `GraphReader.prefetch`'s answer (edges the caller may
    read by their namespace, strongest first, the hits themselves left out)."""

    name = "prefetch_partners"

    def __init__(self, reader: GraphReader, *, min_weight: float = PREFETCH_MIN_WEIGHT, max_age_s: float = 0.25) -> None:
        super().__init__(max_age_s)
        self.reader = reader
        self.min_weight = min_weight
        self._partners: dict[str, dict[str, tuple[float, str]]] = {}
        # one tuple per (weight, namespace), ids interned (the serving index holds the same strings):
        # at 1M memories 2.6M strong edges held both ways cost ~1.3 GB with a tuple, a float and an id
        # string per entry
        self._values: dict[tuple[float, str], tuple[float, str]] = {}

    def prefetch(self, memory_ids: list[str], namespaces: list[str], limit: int = 10) -> list[Neighbour] | None:
        self._schedule_refresh()
        if not self.loaded:
            return None
        hits, readable = set(memory_ids), set(namespaces)
        out: dict[str, Neighbour] = {}
        for mid in dict.fromkeys(memory_ids):     # equal weights: via the earlier hit, as in SQL
            for other, (weight, ns) in self._partners.get(mid, {}).items():
                if other not in hits and ns in readable and (other not in out or out[other].weight < weight):
                    out[other] = Neighbour(other, mid, "CO_OCCURS", weight)
        return sorted(out.values(), key=lambda n: (-n.weight, n.memory_id))[:limit]

    def _read(self, since: int) -> tuple[bool, list[Edge], int] | None:
        return read_changes(self.reader, since, self.min_weight)

    def _forget(self) -> None:
        self._partners = {}

    def _apply(self, changes: tuple[bool, list[Edge], int]) -> None:
        full, edges, latest = changes
        if full:
            self._partners, self._values = {}, {}
        partners, values = self._partners, self._values
        for source, target, weight, ns in edges:
            source, target = sys.intern(source), sys.intern(target)
            value = (float(weight), ns)
            value = values.setdefault(value, value)
            for a, b in ((source, target), (target, source)):
                if weight > self.min_weight:
                    partners.setdefault(a, {})[b] = value
                else:
                    mine = partners.get(a)
                    if mine is not None:
                        mine.pop(b, None)
                        if not mine:
                            del partners[a]
        self._change = latest
