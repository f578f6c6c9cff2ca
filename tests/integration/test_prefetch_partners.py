"""The gateway's prefetch partners in memory (projections.serving.prefetch): the same answers as
the graph's SQL lookup, incrementally from the projector's CO_OCCURS log through new co-recalls,
deletions and prunes, and from a reload when the log was trimmed past it or the graph rebuilt."""

from __future__ import annotations

import itertools
import shutil
import sqlite3
from pathlib import Path

import projections.graph.cooccurs as cooccurs_module
from projections.graph.reader import GraphReader
from projections.graph.schema import DB_FILE
from projections.serving.prefetch import BOUNDS_SQL, PrefetchPartners
from test_projection_graph import ALICE, SHARED, append, commit, delete, project, pruned, rows, served

IDS = ["s1", "s2", "s3", "s4", "s5", "p1", "p2", "p3"]
SCOPES = [[SHARED], [SHARED, ALICE], [ALICE]]


def _same_as_sql(partners: PrefetchPartners, reader: GraphReader, min_weight: float) -> None:
    checked = 0
    for n in (1, 2, 3):
        for hits in itertools.combinations(IDS, n):
            for scope in SCOPES:
                want = reader.prefetch(list(hits), scope, min_weight=min_weight, limit=5)
                assert partners.prefetch(list(hits), scope, limit=5) == want, (hits, scope)
                checked += bool(want)
    assert checked  # some answers were not empty


async def _graph(store, directory: Path) -> None:
    await append(store, *[commit(m, f"memory {m}", ns=ALICE if m.startswith("p") else SHARED) for m in IDS],
                 served("s1", "s4"), served("s1", "s4"), served("s1", "s5"), served("s1", "p2"),
                 served("s2", "s3"), served("s2", "s3", "s4"))
    await (await project(store, directory)).close()


async def test_partners_follow_the_log_and_answer_like_the_sql_lookup(store, tmp_path: Path) -> None:
    await _graph(store, tmp_path)
    reader = GraphReader(tmp_path)
    partners = PrefetchPartners(reader, min_weight=0.4, max_age_s=3600)
    assert partners.prefetch(["s1"], [SHARED]) is None          # not loaded: the caller asks SQLite
    await partners.refresh()
    assert partners.loaded
    _same_as_sql(partners, reader, 0.4)

    await append(store, served("s4", "s5"), served("s4", "s5"), served("p1", "p3"), delete("s2"))
    await (await project(store, tmp_path)).close()
    before = partners._change
    await partners.refresh()                                     # replays the new log entries only
    assert partners._change > before and "s2" not in partners._partners
    _same_as_sql(partners, reader, 0.4)

    strong = [r["id"] for r in rows(tmp_path, "SELECT id FROM graph_edges WHERE relation_type = 'CO_OCCURS' "
                                              "AND weight > 0.4 ORDER BY id")]
    await append(store, pruned(archived_edges=(strong[0],), removed_edges=(strong[1],)))
    await (await project(store, tmp_path)).close()
    await partners.refresh()
    _same_as_sql(partners, reader, 0.4)
    await partners.close()
    reader.close()


async def test_partners_reload_when_the_log_was_trimmed_or_the_graph_rebuilt(store, tmp_path: Path,
                                                                             monkeypatch) -> None:
    await _graph(store, tmp_path / "g")
    reader = GraphReader(tmp_path / "g")
    partners = PrefetchPartners(reader, min_weight=0.4, max_age_s=3600)
    await partners.refresh()
    seen = partners._change
    monkeypatch.setattr(cooccurs_module, "COOCCURS_LOG_KEEP", 1)    # the projector keeps 2 log entries
    await append(store, served("s4", "s5"), served("s4", "s5"), served("s3", "s5"), served("s3", "s5"))
    await (await project(store, tmp_path / "g")).close()
    lowest = rows(tmp_path / "g", "SELECT MIN(change) AS c FROM cooccurs_log")[0]["c"]
    assert lowest > seen + 1                                     # the entries after `seen` are gone
    await partners.refresh()
    _same_as_sql(partners, reader, 0.4)
    reader.close()

    shutil.rmtree(tmp_path / "g")                                # rebuilt from the log: numbering restarts
    await append(store, served("p1", "p3"))
    await (await project(store, tmp_path / "g")).close()
    assert (tmp_path / "g" / DB_FILE).exists()
    reader = GraphReader(tmp_path / "g")
    partners.reader = reader
    await partners.refresh()
    _same_as_sql(partners, reader, 0.4)
    await partners.close()
    reader.close()


def test_partners_hold_one_tuple_per_weight_and_namespace_and_interned_ids() -> None:
    import sys

    partners = PrefetchPartners(GraphReader.__new__(GraphReader), min_weight=0.5)
    ids = ["".join(["m", str(i)]) for i in range(6)]          # built at run time: not interned yet
    edges = [(ids[0], ids[1], 1.0, SHARED), (ids[0], ids[2], 1.0, SHARED), (ids[3], ids[4], 1.0, ALICE),
             (ids[4], ids[5], 0.75, SHARED), (ids[1], ids[2], 1.0, SHARED)]
    partners._apply((True, edges, 7))
    held = partners._partners
    assert held[ids[0]][ids[1]] is held[ids[0]][ids[2]] is held[ids[1]][ids[2]] == (1.0, SHARED)
    assert held[ids[3]][ids[4]] == (1.0, ALICE) and held[ids[4]][ids[5]] == (0.75, SHARED)
    assert all(key is sys.intern(key) for key in held) and all(k is sys.intern(k) for d in held.values() for k in d)
    assert len(partners._values) == 3


async def test_the_log_bounds_are_two_seeks_not_a_scan(store, tmp_path: Path) -> None:
    """Every refresh reads the log's first and last change numbers: one `MIN(x), MAX(x)` query scans
    all the entries kept (16 ms for 200k, four times a second), two subqueries seek."""
    await _graph(store, tmp_path)
    conn = sqlite3.connect(tmp_path / DB_FILE)
    plan = " | ".join(row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + BOUNDS_SQL))
    assert "SCAN cooccurs_log" not in plan and plan.count("SEARCH cooccurs_log") == 2, plan
    assert conn.execute(BOUNDS_SQL).fetchone() == conn.execute(
        "SELECT MIN(change), MAX(change) FROM cooccurs_log").fetchone() != (None, None)
    conn.close()
