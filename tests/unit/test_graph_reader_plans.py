"""The graph lookups every recall makes (prefetch) and sparse recalls make (expansion) must use
the edge indexes: an OR over source/target, or the namespace index, made SQLite scan every edge
(300 ms per recall at 100k memories)."""

from __future__ import annotations

import sqlite3

from projections.graph.reader import GraphReader
from projections.graph.projector import PROJECTION_SCHEMA
from projections.graph.schema import DB_FILE
from tests.graph_tables import insert_edges


def _graph(tmp_path) -> None:
    conn = sqlite3.connect(tmp_path / DB_FILE)
    conn.executescript(PROJECTION_SCHEMA)
    conn.executemany("INSERT INTO graph_nodes (id, type, label, namespace) VALUES (?, ?, ?, 'shared')",
                     [(f"m{i}", "fact", f"memory {i}") for i in range(50)] + [("e1", "entity", "Redis")])
    insert_edges(conn, ("id", "source_id", "target_id", "relation_type", "weight", "namespace"),
                 [(f"CO_OCCURS:m{i}:m{i + 1}", f"m{i}", f"m{i + 1}", "CO_OCCURS", 0.9, "shared") for i in range(49)]
                 + [(f"REFERENCES:m{i}:e1", f"m{i}", "e1", "REFERENCES", 0.5, "shared") for i in range(50)])
    conn.commit()
    conn.close()


def test_recall_path_lookups_use_the_edge_indexes(tmp_path):
    _graph(tmp_path)
    reader = GraphReader(tmp_path)
    conn = reader.connection()
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    assert [n.memory_id for n in reader.prefetch(["m10"], ["shared"])] == ["m11", "m9"] or \
        {n.memory_id for n in reader.prefetch(["m10"], ["shared"])} == {"m9", "m11"}
    assert reader.neighbours(["m10"], ["shared"])
    conn.set_trace_callback(None)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert selects
    for sql in selects:
        steps = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
        plan = " | ".join(steps)
        # every table is reached through an index: no full scan, no sort (a hub's edges are read strongest
        # first through an index, not all sorted), and nodes not looked up by namespace
        scans = [step for step in steps if (step.startswith("SCAN") and "(subquery" not in step)
                 or "idx_nodes_namespace" in step or "TEMP B-TREE" in step]
        assert not scans, f"{sql}\n-> {plan}"
    reader.close()

