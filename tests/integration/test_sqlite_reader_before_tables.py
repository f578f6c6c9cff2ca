"""A SQLite projection's database exists a moment before its tables (the projector creates the file,
then runs its schema): its readers then answer "nothing yet", never an error (a replica's
/api/v1/stats answered 500 `no such table: conflicts` in that moment)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from projections.conflicts.reader import DB_FILE as CONFLICTS_DB
from projections.conflicts.reader import ConflictsReader
from projections.graph.reader import GraphReader
from projections.graph.schema import DB_FILE as GRAPH_DB


def _bare(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    sqlite3.connect(path).close()      # the file, no tables


async def test_conflicts_and_graph_readers_read_nothing_before_the_tables_exist(tmp_path: Path) -> None:
    _bare(tmp_path / "conflicts" / CONFLICTS_DB)
    conflicts = ConflictsReader(tmp_path / "conflicts")
    assert await conflicts.page(None, "open", 1, 0) == ([], 0)
    assert await conflicts.page(["shared"], "all", 10, 0) == ([], 0)
    assert await conflicts.get("c-1") is None
    assert await conflicts.profile("value", "agent_inference", "user_stated") == {}
    conflicts.close()

    _bare(tmp_path / "graph" / GRAPH_DB)
    graph = GraphReader(tmp_path / "graph")
    assert graph.namespaces() == []
    assert graph.stats(None) == GraphReader(tmp_path / "no-graph-yet").stats(None)    # as with no file at all
    graph.close()
