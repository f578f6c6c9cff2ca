"""Graph schema 3 (`projections.graph.cooccurs`: CO_OCCURS edges in a table of their own, `graph_edges`
a view) folds and reads exactly as schema 2 did: a fixed mixed log (co-recalls, deletions whose edges
leave their last co-recall behind, a re-committed memory, corrections, conflicts, a prune that removes,
archives and merges) gives the digests and reader answers schema 2's code gave (recorded from it, commit
f6fb030), at batch 1 and 2000; a schema-2 graph.db is migrated when the projector starts, to the same
digest, and folds on from there; the gateway's prefetch partners follow the migrated graph."""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import sqlite3
from pathlib import Path

from events.catalogue import (
    ConflictDetected, ConflictResolved, GraphPruned, MemoryCommitted, MemoryCorrected, MemoryDeleted, MemoryForgotten,
    RecallServed, new_event,
)
from events.envelope import Event
from projections.graph.navigate import GraphNotFound
from projections.graph.projector import GraphProjector
from projections.graph.query_parse import parse
from projections.graph.reader import GraphReader
from projections.graph.schema import DB_FILE
from projections.serving.prefetch import PrefetchPartners

NS = ["shared", "alice-main"]
MIDS = [f"m{i:03d}" for i in range(60)] + ["x:1", "y.2"]
# recorded from schema 2's fold and readers (commit f6fb030) over `_log()`; do not re-record
SCHEMA_2_DIGEST = "843a4894e9c26564f14398e55db5588058293e497d3b906867ed69cc8e72a194"
SCHEMA_2_HALF_DIGEST = "b38e6da9ada4491dace51050b8214eaa495f28c47a19ed7df7d104e4f7aa7762"
SCHEMA_2_ANSWERS = {"stats": "819bd55aeb878a3f", "degrees": "90cbbb67589a8d22", "dependants": "74dcecf4ef1f5df9",
                    "prefetch": "9ad6217241e3ccd2", "neighbours": "b73af2d94af2a093", "prune": "5515abc92ac04138",
                    "navigate": "d3fe3738bc86e423", "query": "ba405672666f0859"}


def _log() -> list[Event]:
    rng = random.Random(7)
    ns_of = {m: NS[i % 2] for i, m in enumerate(MIDS)}
    words = ["Redis", "Kafka", "port 6379", "Postgres", "Nginx", "Grafana"]
    evs = [new_event(MemoryCommitted(m, f"{rng.choice(words)} {rng.choice(words)} note {i}", ns_of[m], "fact",
                                     "system_fact", depends_on=(MIDS[i - 1],) if i % 7 == 3 else (),
                                     derived_from="chat-1" if i % 9 == 0 else None), ns=ns_of[m], agent="a")
           for i, m in enumerate(MIDS)]

    def recall() -> Event:
        ids = tuple(rng.sample(MIDS[:30], 8))
        return new_event(RecallServed("q", tuple(NS), ids, tuple(0.5 for _ in ids)), ns="shared", agent="a")

    for k in range(400):
        evs.append(recall())
        if k == 100:
            evs += [new_event(MemoryDeleted("m005", "alice-main", 2, "x"), ns="alice-main", agent="a"),
                    new_event(MemoryForgotten("m006", "shared", 2, "lru"), ns="shared", agent="a"),
                    new_event(MemoryCorrected("m007", "alice-main", 2, "Kafka now", "fix"), ns="alice-main", agent="a"),
                    new_event(ConflictDetected("k1", "shared", ("m008", "m010"), 0.7), ns="shared", agent="a"),
                    new_event(ConflictDetected("k2", "shared", ("m010", "m008"), 0.6), ns="shared", agent="a")]
        if k == 150:
            evs += [new_event(ConflictResolved("k1", "shared", "latest_wins"), ns="shared", agent="a"),
                    new_event(MemoryCommitted("m005", "Redis again", "alice-main", "fact", "system_fact"),
                              ns="alice-main", agent="a")]
        if k == 200:
            evs.append(new_event(GraphPruned(
                removed_nodes=("entity:shared:name:nginx",),
                removed_edges=("CO_OCCURS:m001:m002", "CO_OCCURS:m003:m004", "CO_OCCURS:nope:x"),
                archived_edges=("CO_OCCURS:m002:m009", "CONFLICTS_WITH:m008:m010", "CO_OCCURS:m011:m012"),
                merged_edges=(("CONFLICTS_WITH:m010:m008", "CONFLICTS_WITH:m008:m010"),)), ns="shared", agent="s"))
        if k == 300:
            evs += [new_event(MemoryDeleted("m009", "shared", 2, "x"), ns="shared", agent="a"),
                    new_event(MemoryDeleted("x:1", "alice-main", 2, "x"), ns="alice-main", agent="a")]
    evs.append(new_event(RecallServed("q", tuple(NS), ("x:1", "y.2", "m001", "m002"), (0.5,) * 4), ns="shared",
                         agent="a"))
    evs += [recall() for _ in range(20)]
    return [e.placed(position=f"{1_700_000_000_000 + i * 60_000}-0", hlc=f"{1_700_000_000_000 + i * 60_000}:0:n",
                     origin="o") for i, e in enumerate(evs, 1)]


async def _fold(directory: Path, events: list[Event], batch: int) -> str:
    p = GraphProjector(directory)
    await p.load_checkpoint()
    for i in range(0, len(events), batch):
        await p.apply(events[i:i + batch])
    digest = await p.digest()
    await p.close()
    return digest


def _answers(directory: Path) -> dict[str, str]:
    """What the graph readers answer over the graph at `directory`, each kind hashed (query rows sorted:
    they come in scan order)."""
    r = GraphReader(directory)
    scopes = [["shared"], ["shared", "alice-main"], ["alice-main"]]
    out: dict = {
        "stats": [r.stats(ns) for ns in [*scopes, None]],
        "degrees": r.degrees(MIDS),
        "dependants": [r.dependants(m) for m in MIDS],
        "prefetch": [[(n.memory_id, n.via, round(n.weight, 9)) for n in r.prefetch(MIDS[i:i + 3], ns, min_weight=w)]
                     for i in range(0, 30, 3) for ns in scopes for w in (0.0, 0.3, 0.6)],
        "neighbours": [[(n.memory_id, n.via, n.relation, round(n.weight, 9), n.entity)
                        for n in r.neighbours(MIDS[i:i + 2], ns)] for i in range(0, 30, 2) for ns in scopes],
        "prune": [repr(r.prune_plan(1_700_000_000_000 + d * 86_400_000)) for d in (0, 10, 20, 40, 60, 100)],
    }
    paths = []
    for (a, b), ns in itertools.product([("m001", "m020"), ("m003", "m015"), ("m010", "m028"), ("m000", "m027"),
                                         ("m002", "m011")], scopes):
        try:
            paths.append([(p.score, [n["id"] for n in p.nodes], [e["id"] for e in p.edges])
                          for p in r.navigate(a, b, ns, 3)])
        except GraphNotFound as exc:
            paths.append(str(exc))
    out["navigate"] = paths
    queries = ["MATCH (a)-[r:CO_OCCURS]-(b) RETURN r.id, r.weight, r.evidence_count, a.id, b.id LIMIT 1000",
               "MATCH (a)-[r:CO_OCCURS]->(b) WHERE a.id = 'm001' RETURN r",
               "MATCH (a)-[r]-(b) RETURN r.relation_type, count(*)",
               "MATCH (a {id: 'm002'})-[r]-(b)-[s:CO_OCCURS]-(c) RETURN c.id, s.weight LIMIT 1000",
               "MATCH (a)<-[r:CO_OCCURS]-(b) WHERE r.weight > 0.5 RETURN a.id, b.id, r.created_at LIMIT 1000"]
    out["query"] = [sorted(map(repr, r.query(parse(q), ns)["rows"])) for q in queries for ns in scopes]
    r.close()
    return {k: hashlib.sha256(json.dumps(v, sort_keys=True, default=repr).encode()).hexdigest()[:16]
            for k, v in out.items()}


async def test_the_same_digests_and_answers_as_schema_2_at_any_batching(tmp_path: Path) -> None:
    log = _log()
    for batch in (1, 2000):
        assert await _fold(tmp_path / f"b{batch}", log, batch) == SCHEMA_2_DIGEST, batch
    assert _answers(tmp_path / "b1") == SCHEMA_2_ANSWERS
    conn = sqlite3.connect(tmp_path / "b1" / DB_FILE)
    gone = conn.execute("SELECT COUNT(*) FROM graph_cooccur_gone").fetchone()[0]
    conn.close()
    assert gone    # the log leaves deleted edges' last co-recalls for the digest to show


def _rows(directory: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(directory / DB_FILE)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


async def _same_as_sql(partners: PrefetchPartners, reader: GraphReader) -> None:
    await partners.refresh()
    checked = 0
    for hits in [*itertools.combinations(MIDS[:12], 1), *itertools.combinations(MIDS[:8], 2)]:
        for scope in (["shared"], ["shared", "alice-main"], ["alice-main"]):
            want = reader.prefetch(list(hits), scope, min_weight=0.4, limit=5)
            assert partners.prefetch(list(hits), scope, limit=5) == want, (hits, scope)
            checked += bool(want)
    assert checked


async def test_a_schema_2_graph_is_migrated_at_start_and_folds_on(tmp_path: Path) -> None:
    from tests.graph_tables import as_schema_2

    log = _log()
    half = len(log) // 2
    assert await _fold(tmp_path / "g", log[:half], 2000) == SCHEMA_2_HALF_DIGEST
    as_schema_2(tmp_path / "g" / DB_FILE)     # as schema 2 stored it
    assert _rows(tmp_path / "g", "SELECT type FROM sqlite_master WHERE name IN ('graph_edges', 'graph_cooccurs')") \
        == [("table",)]
    logged = _rows(tmp_path / "g", "SELECT MAX(change) FROM cooccurs_log")[0][0]

    # a crash half-way leaves schema 2 whole (one transaction with the version): here, a table in the way
    conn = sqlite3.connect(tmp_path / "g" / DB_FILE)
    conn.execute("CREATE TABLE graph_cooccur_gone (x)")
    conn.commit()
    conn.close()
    p = GraphProjector(tmp_path / "g")
    try:
        await p.load_checkpoint()
        raise AssertionError("the migration did not fail")
    except sqlite3.OperationalError:
        pass
    await p.close()
    assert _rows(tmp_path / "g", "PRAGMA user_version") == [(2,)]
    assert _rows(tmp_path / "g", "SELECT COUNT(*) FROM graph_edges WHERE relation_type = 'CO_OCCURS'")[0][0] > 100
    conn = sqlite3.connect(tmp_path / "g" / DB_FILE)
    conn.execute("DROP TABLE graph_cooccur_gone")
    conn.commit()
    conn.close()

    # started: migrated before any event, to what schema 3 folds from the log; the log's numbering goes on
    p = GraphProjector(tmp_path / "g")
    await p.load_checkpoint()
    assert _rows(tmp_path / "g", "PRAGMA user_version") == [(4,)]
    assert await p.digest() == SCHEMA_2_HALF_DIGEST
    assert _rows(tmp_path / "g", "SELECT name FROM sqlite_master WHERE name IN ('graph_cooccur', 'cooccurs_log_insert', "
                                 "'cooccurs_log_update', 'cooccurs_log_delete')") == []
    await _fold(tmp_path / "fresh", log[:half], 2000)
    assert _answers(tmp_path / "g") == _answers(tmp_path / "fresh")
    reader = GraphReader(tmp_path / "g")
    partners = PrefetchPartners(reader, min_weight=0.4, max_age_s=3600)
    await _same_as_sql(partners, reader)
    assert partners._change == logged

    # folding on (co-recalls, a prune, deletions): the same digest as schema 2's, the partners follow the log
    await p.apply(log[half:])
    assert await p.digest() == SCHEMA_2_DIGEST
    await p.close()
    await _same_as_sql(partners, reader)
    assert partners._change > logged
    await partners.close()
    reader.close()


async def test_recalls_fold_late_only_past_events_they_commute_with(tmp_path: Path) -> None:
    """A batch folds its recalls together, past the events that change nothing they read: a recall that
    names a memory committed after it, or an entity node an extraction or correction adds after it, and
    a deletion after it, must fold as one by one."""
    def commit(mid: str, content: str = "Redis listens on port 6379") -> Event:
        return new_event(MemoryCommitted(mid, content, "shared", "fact", "system_fact"), ns="shared", agent="a")

    def served(*ids: str) -> Event:
        return new_event(RecallServed("q", ("shared",), ids, tuple(0.5 for _ in ids)), ns="shared", agent="a")

    redis = "entity:shared:name:redis"
    events = [commit("a"), commit("b", "Kafka carries events"), served("a", "b", "c"), commit("c"), served("a", "c"),
              served("a", redis), commit("d"), served(redis, "b"), served("b", "c"), served("entity:shared:name:nginx", "a"),
              new_event(MemoryCorrected("b", "shared", 2, "Kafka and Nginx", "fix"), ns="shared", agent="a"),
              served("b", "entity:shared:name:nginx", "a"), served("a", "b"),
              new_event(MemoryDeleted("c", "shared", 2, "x"), ns="shared", agent="a"), served("a", "c", "b"),
              commit("c"), served("c", "a")]
    events = [e.placed(position=f"{1_700_000_000_000 + i}-0", hlc=f"{1_700_000_000_000 + i}:0:n", origin="o")
              for i, e in enumerate(events, 1)]
    one_by_one = await _fold(tmp_path / "one", events, 1)
    assert await _fold(tmp_path / "all", events, len(events)) == one_by_one
    for i in range(len(events)):   # a batch may start anywhere
        assert await _fold(tmp_path / f"at{i}", events[:i] + events[i:], max(1, i)) == one_by_one


async def test_a_schema_3_graph_gets_lean_recall_counts_at_start(tmp_path: Path) -> None:
    log = _log()
    half = len(log) // 2
    assert await _fold(tmp_path / "g", log[:half], 2000) == SCHEMA_2_HALF_DIGEST
    conn = sqlite3.connect(tmp_path / "g" / DB_FILE)   # graph_recalls as schema 3 stored it: a rowid table
    conn.executescript("CREATE TABLE old (memory_id TEXT PRIMARY KEY, count INTEGER NOT NULL);"
                       "INSERT INTO old SELECT * FROM graph_recalls; DROP TABLE graph_recalls;"
                       "ALTER TABLE old RENAME TO graph_recalls; PRAGMA user_version = 3;")
    conn.close()
    counts = _rows(tmp_path / "g", "SELECT * FROM graph_recalls ORDER BY memory_id")
    assert len(counts) > 10
    p = GraphProjector(tmp_path / "g")
    await p.load_checkpoint()
    assert _rows(tmp_path / "g", "PRAGMA user_version") == [(4,)]
    assert _rows(tmp_path / "g", "SELECT sql FROM sqlite_master WHERE name = 'graph_recalls'")[0][0] \
        .endswith("WITHOUT ROWID")
    assert _rows(tmp_path / "g", "SELECT * FROM graph_recalls ORDER BY memory_id") == counts
    assert await p.digest() == SCHEMA_2_HALF_DIGEST
    await p.apply(log[half:])
    assert await p.digest() == SCHEMA_2_DIGEST
    await p.close()
