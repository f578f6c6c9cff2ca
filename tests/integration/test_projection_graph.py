"""The graph projector (`projections.graph.projector`) against a real Redis log and a real SQLite graph.db in
tmp_path: nodes and edges from commits, corrections and removals, CO_OCCURS from recalls,
conflicts, `graph.pruned` + PageRank, effectively-once folding and rebuild determinism, the
`GraphReader` lookups and `plan_prune` over the projected graph."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from events.catalogue import (
    ConflictDetected, ConflictResolved, GraphPruned, MemoryCommitted, MemoryCorrected, MemoryDeleted, MemoryForgotten,
    RecallServed, new_event,
)
from events.envelope import Event
from events.hlc import iso_from_ms
from projections.graph.projector import GraphProjector, entity_node_id
from tests.graph_tables import as_schema_2
from tests.hash_embedder import HashEmbedder
from projections.graph.reader import GraphReader, Neighbour
from projections.graph.prune import DAY_MS, PrunePlan, plan_prune
from projections.graph.schema import DB_FILE
from projections.core.registry import projection_dir
from projections.core.replay import live_digests, rebuild
from projections.core.runner import ProjectionRunner

SHARED, ALICE = "shared", "alice-main"
HOUR_MS = 3_600_000


# --------------------------------------------------------------------------- events


def commit(mid: str, content: str, ns: str = SHARED, category: str = "fact", **kw) -> Event:
    return new_event(MemoryCommitted(mid, content, ns, category, "system_fact", **kw), ns=ns, agent="alice")


def correct(mid: str, content: str, ns: str = SHARED, version: int = 2) -> Event:
    return new_event(MemoryCorrected(mid, ns, version, content, "fixed"), ns=ns, agent="bob")


def delete(mid: str, ns: str = SHARED) -> Event:
    return new_event(MemoryDeleted(mid, ns, 2, "wrong"), ns=ns, agent="bob")


def forget(mid: str, ns: str = SHARED) -> Event:
    return new_event(MemoryForgotten(mid, ns, 2, "lru"), ns=ns, agent="scheduler")


def served(*ids: str) -> Event:
    return new_event(RecallServed("q", (SHARED, ALICE), ids, tuple(0.5 for _ in ids)), ns=SHARED, agent="alice")


def conflict(cid: str, *ids: str, confidence: float = 0.7) -> Event:
    return new_event(ConflictDetected(cid, SHARED, ids, confidence), ns=SHARED, agent="detector")


def resolved(cid: str) -> Event:
    return new_event(ConflictResolved(cid, SHARED, "latest_wins"), ns=SHARED, agent="alice")


def pruned(plan: PrunePlan | None = None, **kw) -> Event:
    if plan is not None:
        kw = {"removed_nodes": plan.removed_nodes, "removed_edges": plan.removed_edges,
              "archived_edges": plan.archived_edges, "merged_edges": plan.merged_edges}
    return new_event(GraphPruned(**kw), ns=SHARED, agent="scheduler")


# --------------------------------------------------------------------------- helpers


async def append(store, *events: Event) -> list[Event]:
    res = await store.append(list(events))
    return [await store.get(p) for p in res.positions]


async def project(store, directory: Path, batch_size: int = 100) -> GraphProjector:
    """A graph projector over `directory`, caught up with the whole log (the caller closes it)."""
    p = GraphProjector(directory)
    await ProjectionRunner(store, p, publish=False, batch_size=batch_size).catch_up()
    return p


def rows(directory: Path, sql: str, args: tuple = ()) -> list[dict]:
    conn = sqlite3.connect(directory / DB_FILE)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, args)]
    finally:
        conn.close()


def nodes(directory: Path) -> dict[str, dict]:
    return {r["id"]: r for r in rows(directory, "SELECT * FROM graph_nodes")}


def edges(directory: Path) -> dict[str, dict]:
    return {r["id"]: r for r in rows(directory, "SELECT * FROM graph_edges")}


def co(directory: Path) -> dict[str, tuple[int, float]]:
    """CO_OCCURS edges: id -> (evidence, weight)."""
    return {e["id"]: (e["evidence_count"], round(e["weight"], 9)) for e in edges(directory).values()
            if e["relation_type"] == "CO_OCCURS"}


def recall_counts(directory: Path) -> dict[str, int]:
    return {r["memory_id"]: r["count"] for r in rows(directory, "SELECT * FROM graph_recalls")}


def touching(directory: Path, node: str) -> list[str]:
    return [e["id"] for e in edges(directory).values() if node in (e["source_id"], e["target_id"])]


def ent(ns: str, norm: str, kind: str = "name") -> str:
    return entity_node_id(ns, kind, norm)


# --------------------------------------------------------------------------- 1. nodes and edges


async def test_commits_make_memory_entity_and_episode_nodes_with_their_edges(store, tmp_path: Path) -> None:
    evs = await append(store,
                       commit("m1", "Redis listens on port 6379"),
                       commit("m2", "Use Redis for the cache", ns=ALICE, category="decision", depends_on=("m1",),
                              derived_from="ep-7"))
    p = await project(store, tmp_path)
    at1, at2 = iso_from_ms(evs[0].wall_ms), iso_from_ms(evs[1].wall_ms)

    n = nodes(tmp_path)
    assert {k: (v["type"], v["namespace"]) for k, v in n.items()} == {
        "m1": ("fact", SHARED),
        "m2": ("decision", ALICE),
        ent(SHARED, "redis"): ("entity", SHARED),          # the same entity, once per namespace
        ent(SHARED, "6379", "port"): ("entity", SHARED),
        ent(ALICE, "redis"): ("entity", ALICE),
        f"episode:{ALICE}:ep-7": ("episode", ALICE),    # the client's episode id, scoped to the namespace
    }
    assert (n["m1"]["label"], n["m1"]["created_at"], n["m1"]["pagerank"]) == ("Redis listens on port 6379", at1, 1.0)
    assert n["m2"]["properties"] == '{"category":"decision","memory_id":"m2","version":1}'
    assert n[ent(ALICE, "redis")]["label"] == "Redis" and n[f"episode:{ALICE}:ep-7"]["created_at"] == at2

    e = edges(tmp_path)
    assert {k: (v["relation_type"], v["source_id"], v["target_id"], v["weight"], v["namespace"], v["evidence_count"])
            for k, v in e.items()} == {
        f"REFERENCES:m1:{ent(SHARED, 'redis')}": ("REFERENCES", "m1", ent(SHARED, "redis"), 0.5, SHARED, 1),
        f"REFERENCES:m1:{ent(SHARED, '6379', 'port')}":
            ("REFERENCES", "m1", ent(SHARED, "6379", "port"), 0.5, SHARED, 1),
        f"REFERENCES:m2:{ent(ALICE, 'redis')}": ("REFERENCES", "m2", ent(ALICE, "redis"), 0.5, ALICE, 1),
        # the source's namespace, even though the target is shared
        "DEPENDS_ON:m2:m1": ("DEPENDS_ON", "m2", "m1", 1.0, ALICE, 1),
        f"DERIVED_FROM:m2:episode:{ALICE}:ep-7": ("DERIVED_FROM", "m2", f"episode:{ALICE}:ep-7", 1.0, ALICE, 1),
    }
    assert e["DEPENDS_ON:m2:m1"]["created_at"] == at2
    await p.close()


async def test_one_episode_id_in_two_namespaces_is_two_episode_nodes_and_schema_1_is_migrated(
        store, tmp_path: Path) -> None:
    await append(store, commit("s1", "Redis listens on port 6379", derived_from="chat-1"),
                 commit("a1", "Use Redis for the cache", ns=ALICE, derived_from="chat-1"),
                 commit("s2", "Nginx fronts Redis", derived_from="chat-1"),
                 commit("a2", "Kafka carries events", ns=ALICE, derived_from="chat-1"))
    p = await project(store, tmp_path / "now")
    episodes = {k: v["namespace"] for k, v in nodes(tmp_path / "now").items() if v["type"] == "episode"}
    assert episodes == {f"episode:{SHARED}:chat-1": SHARED, f"episode:{ALICE}:chat-1": ALICE}
    assert sorted(e["id"] for e in edges(tmp_path / "now").values() if e["relation_type"] == "DERIVED_FROM") == [
        f"DERIVED_FROM:a1:episode:{ALICE}:chat-1", f"DERIVED_FROM:a2:episode:{ALICE}:chat-1",
        f"DERIVED_FROM:s1:episode:{SHARED}:chat-1", f"DERIVED_FROM:s2:episode:{SHARED}:chat-1"]
    want = await p.digest()
    await p.close()

    # the same graph as schema 1 wrote it: one unscoped node episode:chat-1 (the first commit's
    # namespace, updated at the last commit) that every DERIVED_FROM edge points to
    old = tmp_path / "old"
    shutil.copytree(tmp_path / "now", old)
    as_schema_2(old / DB_FILE)
    conn = sqlite3.connect(old / DB_FILE)
    first, last = (conn.execute(f"SELECT {f}(created_at) FROM graph_edges WHERE relation_type = 'DERIVED_FROM'")
                   .fetchone()[0] for f in ("MIN", "MAX"))
    conn.execute("DELETE FROM graph_nodes WHERE type = 'episode'")
    conn.execute("INSERT INTO graph_nodes VALUES ('episode:chat-1', 'episode', 'chat-1', ?, "
                 "'{\"episode_id\":\"chat-1\"}', 1.0, ?, ?)", (SHARED, first, last))
    conn.execute("UPDATE graph_edges SET target_id = 'episode:chat-1', "
                 "id = 'DERIVED_FROM:' || source_id || ':episode:chat-1' WHERE relation_type = 'DERIVED_FROM'")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    migrated = GraphProjector(old)
    await migrated.apply(await append(store, commit("s3", "Postgres stores orders")))
    assert rows(old, "PRAGMA user_version") == [{"user_version": 4}]
    again = await project(store, tmp_path / "again")
    assert await migrated.digest() == await again.digest() != want  # as if built by schema 3 (plus s3)
    await migrated.close()
    await again.close()


# --------------------------------------------------------------------------- 2. correction, deletion


async def test_a_correction_replaces_the_memory_references(store, tmp_path: Path) -> None:
    await append(store, commit("m1", "Redis listens on port 6379", category="decision"),
                 commit("m2", "Nginx fronts Redis"))
    corr = await append(store, correct("m1", "Kafka listens on port 6379"), correct("ghost", "Kafka"))
    p = await project(store, tmp_path)

    refs = sorted(e["target_id"] for e in edges(tmp_path).values()
                  if e["source_id"] == "m1" and e["relation_type"] == "REFERENCES")
    assert refs == [ent(SHARED, "kafka"), ent(SHARED, "6379", "port")]  # redis no longer, kafka now
    n = nodes(tmp_path)
    assert (n["m1"]["type"], n["m1"]["label"]) == ("decision", "Kafka listens on port 6379")  # category kept
    assert n["m1"]["last_updated_at"] == iso_from_ms(corr[0].wall_ms)
    assert ent(SHARED, "redis") in n and touching(tmp_path, ent(SHARED, "redis")) == \
        [f"REFERENCES:m2:{ent(SHARED, 'redis')}"]  # still m2's
    assert "ghost" not in n  # a correction of a memory the graph does not know adds nothing
    await p.close()


@pytest.mark.parametrize("remove", [delete, forget], ids=["deleted", "forgotten"])
async def test_deletion_or_forgetting_removes_the_node_and_every_edge_touching_it(store, tmp_path: Path,
                                                                                 remove) -> None:
    await append(store, commit("m1", "Redis listens on port 6379", derived_from="ep-1"),
                 commit("m2", "Postgres stores orders", depends_on=("m1",)),
                 commit("m3", "Nginx fronts Redis"),
                 served("m1", "m3"), conflict("k1", "m2", "m1"))
    p = await project(store, tmp_path)
    assert len(touching(tmp_path, "m1")) == 6  # 2 references, derived, depends (in), co-occurs, conflicts (in)
    await p.apply(await append(store, remove("m1")))

    assert "m1" not in nodes(tmp_path) and touching(tmp_path, "m1") == []
    assert "m1" not in recall_counts(tmp_path)
    # what only it pointed at stays, isolated, for graph pruning to take after 14 days
    assert {ent(SHARED, "6379", "port"), f"episode:{SHARED}:ep-1"} <= set(nodes(tmp_path))
    assert sorted(edges(tmp_path)) == [f"REFERENCES:m2:{ent(SHARED, 'postgres')}",
                                       f"REFERENCES:m3:{ent(SHARED, 'nginx')}",
                                       f"REFERENCES:m3:{ent(SHARED, 'redis')}"]
    await p.close()


# --------------------------------------------------------------------------- 3. CO_OCCURS


async def test_co_occurs_from_recalls(store, tmp_path: Path) -> None:
    """Weight = co-recalls / min(recall counts), the counts (top 5 of each recall, known memories
    only) taken AS OF the co-occurrence: the weight is updated only when the pair is recalled
    together again, never when one of them is recalled alone."""
    await append(store, *[commit(m, "a plain note") for m in ("a", "b", "c", "t1", "t2", "t3", "t4", "t5", "t6")],
                 commit("p", "private memory", ns=ALICE))
    p = await project(store, tmp_path)

    async def recall(*batches: tuple[str, ...]) -> None:
        await p.apply(await append(store, *[served(*ids) for ids in batches]))

    await recall(("a", "b"), ("a", "b"), ("a", "c"))
    assert recall_counts(tmp_path) == {"a": 3, "b": 2, "c": 1}
    # a-b: evidence 2, 2 / min(rc(a), rc(b)) = 2 / min(2, 2) when last co-recalled (= 2 / min(3, 2) now): 1.0
    # a-c: evidence 1, 1 / min(3, 1) = 1.0; b and c were never recalled together
    assert co(tmp_path) == {"CO_OCCURS:a:b": (2, 1.0), "CO_OCCURS:a:c": (1, 1.0)}

    await recall(("a",), ("b",), ("b",))
    assert recall_counts(tmp_path) == {"a": 4, "b": 4, "c": 1}
    # recomputed now it would be 2 / min(4, 4) = 0.5: recalls of one end alone do not touch the edge
    assert co(tmp_path) == {"CO_OCCURS:a:b": (2, 1.0), "CO_OCCURS:a:c": (1, 1.0)}

    await recall(("a", "b"))  # together again: 3 / min(5, 5)
    assert co(tmp_path)["CO_OCCURS:a:b"] == (3, 0.6)

    await recall(("ghost", "c", "a", "ghost"))  # unknown ids (and repeats) are ignored
    assert co(tmp_path)["CO_OCCURS:a:c"] == (2, 1.0) and "ghost" not in recall_counts(tmp_path)
    assert touching(tmp_path, "ghost") == [] and "ghost" not in nodes(tmp_path)

    await recall(("t1", "t2", "t3", "t4", "t5", "t6"))  # only the top 5 count
    assert "t6" not in recall_counts(tmp_path) and touching(tmp_path, "t6") == []
    assert len([e for e in co(tmp_path) if e.split(":")[1].startswith("t")]) == 10  # 5 choose 2

    await recall(("a", "p"))  # shared a, private p: the edge lives with the private end
    e = edges(tmp_path)["CO_OCCURS:p:a"]
    assert (e["source_id"], e["target_id"], e["namespace"], e["evidence_count"], e["weight"]) == \
        ("p", "a", ALICE, 1, 1.0)
    assert "CO_OCCURS:a:p" not in edges(tmp_path)
    await p.close()


# --------------------------------------------------------------------------- 4. conflicts, graph.pruned


async def test_conflicts_and_graph_pruned_with_pagerank(store, tmp_path: Path) -> None:
    await append(store, commit("a", "Redis listens on port 6379"), commit("b", "Redis listens on port 6380"),
                 commit("c", "Kafka carries events"), commit("d", "Nginx fronts Redis"),
                 conflict("k1", "a", "b", confidence=0.7), conflict("k2", "a", "ghost"), conflict("k3", "a", "a"),
                 conflict("k4", "b", "a", confidence=0.9), resolved("k1"))
    p = await project(store, tmp_path)
    e = edges(tmp_path)
    conflicts = {k: (v["weight"], v["namespace"]) for k, v in e.items() if v["relation_type"] == "CONFLICTS_WITH"}
    assert conflicts == {"CONFLICTS_WITH:a:b": (0.7, SHARED), "CONFLICTS_WITH:b:a": (0.9, SHARED)}  # only both known
    recorded = rows(tmp_path, "SELECT * FROM graph_conflicts ORDER BY conflict_id")
    assert [(r["conflict_id"], r["edge_id"], r["resolved_at"] is not None) for r in recorded] == \
        [("k1", "CONFLICTS_WITH:a:b", True), ("k4", "CONFLICTS_WITH:b:a", False)]
    assert {n["pagerank"] for n in nodes(tmp_path).values()} == {1.0}  # no prune yet: the default

    kafka, d_nginx = ent(SHARED, "kafka"), f"REFERENCES:d:{ent(SHARED, 'nginx')}"
    await p.apply(await append(store, pruned(removed_nodes=(kafka,), removed_edges=(d_nginx,),
                                             archived_edges=("CONFLICTS_WITH:a:b",),
                                             merged_edges=(("CONFLICTS_WITH:b:a", "CONFLICTS_WITH:a:b"),))))
    n, e = nodes(tmp_path), edges(tmp_path)
    assert kafka not in n and touching(tmp_path, kafka) == [] and "c" in n
    assert d_nginx not in e and ent(SHARED, "nginx") in n
    assert "CONFLICTS_WITH:b:a" not in e
    assert (e["CONFLICTS_WITH:a:b"]["weight"], e["CONFLICTS_WITH:a:b"]["evidence_count"]) == (0.0, 2)
    ranks = [v["pagerank"] for v in n.values()]
    assert len(set(ranks)) > 1 and sum(ranks) / len(ranks) == pytest.approx(1.0, abs=1e-6)
    assert n[ent(SHARED, "redis")]["pagerank"] == max(ranks)  # the hub: a, b and d reference it
    await p.close()


# --------------------------------------------------------------------------- 5. effectively once, rebuilds


async def _mixed_log(store) -> None:
    await append(store, commit("a", "Redis listens on port 6379", derived_from="ep-1"),
                 commit("b", "Nginx fronts Redis", depends_on=("a",)),
                 commit("p", "Use Redis for the cache", ns=ALICE, category="decision"),
                 commit("c", "Kafka carries events"),
                 served("a", "b"), served("a", "b", "p"), served("a"), correct("c", "Grafana shows dashboards"),
                 conflict("k1", "a", "c", confidence=0.6), resolved("k1"),
                 pruned(removed_nodes=(ent(SHARED, "kafka"),), archived_edges=("CONFLICTS_WITH:a:c",)),
                 # after the prune: these must not change the PageRank the prune computed
                 commit("d", "Postgres stores orders", depends_on=("a",)), served("d", "a"), served("b", "d"),
                 delete("b"))


async def test_applying_a_batch_twice_changes_nothing(store, tmp_path: Path) -> None:
    await _mixed_log(store)
    events = await store.read()
    p = GraphProjector(tmp_path)
    await p.apply(events[:7])
    await p.apply(events[:7])
    await p.apply(events[3:])
    first = await p.digest()
    assert await p.load_checkpoint() == events[-1].position
    await p.apply(events)
    await p.apply(events[-3:])
    assert await p.digest() == first
    await p.close()
    again = GraphProjector(tmp_path)  # a new instance that re-reads the checkpoint from graph.db
    await again.apply(events)
    assert await again.digest() == first
    await again.close()


async def _digests_by_batching(store, tmp_path: Path, batches: tuple[int, ...]) -> list[str]:
    """The digest of the whole log caught up from scratch in `tmp_path/run-<i>`, per batch size."""
    digests = []
    for i, batch in enumerate(batches):
        p = await project(store, tmp_path / f"run-{i}", batch_size=batch)
        digests.append(await p.digest())
        await p.close()
    return digests


async def test_catch_up_from_scratch_gives_the_same_digest_whatever_the_batching(store, tmp_path: Path) -> None:
    await _mixed_log(store)
    digests = await _digests_by_batching(store, tmp_path, (1, 3, 1000))
    assert len(set(digests)) == 1
    assert digests[0] != await GraphProjector(tmp_path / "empty").digest()


async def test_runs_of_recalls_fold_together_exactly_as_one_by_one(store, tmp_path: Path) -> None:
    """Consecutive recall.served events are folded as one run (a few statements per batch): long,
    overlapping runs cut by commits, a deletion and a forget give the same graph in batches of 1, 7
    and 1000, and the weights are those of the counts at each co-recall."""
    import random

    rng = random.Random(5)
    ids = [f"m{i}" for i in range(12)]
    log = [commit(m, f"note {m} about service {m}", ns=ALICE if i % 4 == 0 else SHARED) for i, m in enumerate(ids)]
    for step in range(120):
        log.append(served(*rng.sample(ids, rng.randint(1, 7))))
        if step == 40:
            log.append(delete("m3"))
        if step == 70:
            log += [commit("m3", "back again"), forget("m5")]
    await append(store, *log)
    digests = await _digests_by_batching(store, tmp_path, (1, 7, 1000))
    assert len(set(digests)) == 1
    got = co(tmp_path / "run-2")
    assert got and all(0.0 < w <= 1.0 and n >= 1 for n, w in got.values())
    assert not any("m5" in e for e in got)


async def test_deletions_of_memories_no_pending_recall_names_fold_inside_a_run(store, tmp_path: Path) -> None:
    """A deletion or forgetting of a memory none of the recalls before it (in the batch) names is folded
    before them (the run of recalls goes on); one of a named memory ends the run first. Either way the
    graph is the one-by-one graph: recalls over a few memories, deletions of others and of named ones,
    re-commits, recalls naming deleted ids, in batches of 1, 5 and 1000."""
    import random

    rng = random.Random(11)
    hot = [f"h{i}" for i in range(8)]            # what the recalls name
    cold = [f"c{i}" for i in range(30)]          # deleted while runs are pending, never named before
    log = [commit(m, f"note {m} about service {m}", ns=ALICE if i % 3 == 0 else SHARED)
           for i, m in enumerate(hot + cold)]
    log += [served(*rng.sample(hot, 3)) for _ in range(3)]
    log += [served("h0", "c0"), served("c0", "h1", "c1")]       # c0, c1: edges of their own, then deleted
    for step in range(60):
        log.append(served(*rng.sample(hot, rng.randint(2, 5))))
        if step % 6 == 2:
            victim = cold[step // 6]
            log.append(delete(victim) if step % 12 == 2 else forget(victim))
        if step == 30:
            log += [delete("h2"), served("h2", "h3"), commit("h2", "h2 is back"), served("h2", "h4")]
        if step == 45:
            log += [commit("c0", "c0 returns"), served("c0", "h5"), delete("h6")]
    await append(store, *log)
    digests = await _digests_by_batching(store, tmp_path, (1, 5, 1000))
    assert len(set(digests)) == 1
    got = co(tmp_path / "run-2")
    assert any("c0" in e for e in got) and not any("c1" in e or "h6" in e for e in got)
    gone = rows(tmp_path / "run-2", "SELECT edge_id FROM graph_cooccur_gone")
    assert any("c1" in r["edge_id"] for r in gone)      # deleted c1's edge keeps its last co-recall


async def test_an_offline_graph_leaves_its_co_recalls_out_of_the_change_log(store, tmp_path: Path) -> None:
    """A rebuild's graph (`log_changes=False`) writes no `cooccurs_log` entries for co-recalls: the
    same digest as a live one, which logs every change."""
    await _mixed_log(store)
    events = await store.read()
    live, offline = GraphProjector(tmp_path / "live"), GraphProjector(tmp_path / "offline", log_changes=False)
    for p in (live, offline):
        await p.apply(events)
    assert await live.digest() == await offline.digest()
    await live.close()
    await offline.close()
    logged = "SELECT COUNT(*) AS n FROM cooccurs_log"
    assert rows(tmp_path / "live", logged)[0]["n"] > 3
    # the deletion at the end logs its edges' removal (a trigger), co-recalls none
    assert rows(tmp_path / "offline", logged + " WHERE weight >= 0")[0]["n"] == 0
    from projections.core.registry import make_projectors

    [graph] = make_projectors(tmp_path / "r", None, offline=True, only=("graph",))
    [live_graph] = make_projectors(tmp_path / "l", None, only=("graph",))
    assert (graph.log_changes, live_graph.log_changes) == (False, True)


async def test_a_rebuild_equals_the_live_graph_after_a_prune(store, tmp_path: Path) -> None:
    await _mixed_log(store)
    live_root = tmp_path / "live"
    live = GraphProjector(projection_dir(live_root, "graph"))
    for ev in await store.read():  # live: one event at a time, as they arrive
        await live.apply([ev])
    await live.close()
    embedder = HashEmbedder(dim=16)
    rebuilt = (await rebuild(store, tmp_path / "rebuild", embedder))["graph"]  # big offline batches
    current = (await live_digests(live_root, embedder))["graph"]
    assert (rebuilt.digest, rebuilt.position) == (current.digest, current.position)
    ranks = [n["pagerank"] for n in nodes(projection_dir(live_root, "graph")).values()]
    assert len(set(ranks)) > 1


# --------------------------------------------------------------------------- 6. GraphReader


async def _reader_graph(store, directory: Path) -> None:
    await append(store,
                 commit("s1", "Redis listens on port 6379"),
                 commit("s2", "Nginx fronts Redis"),                       # shares the shared Redis with s1
                 commit("s3", "Postgres stores orders", depends_on=("s1",)),
                 commit("s4", "Kafka carries events"),
                 commit("s5", "Grafana shows dashboards"),
                 commit("p1", "Use Redis for the cache", ns=ALICE, category="decision", depends_on=("s1",)),
                 commit("p2", "Deploy with Kubernetes", ns=ALICE),
                 commit("p3", "Redis persists to disk", ns=ALICE),         # shares alice's Redis with p1
                 served("s1"), served("s4"), served("s1", "s4"),           # s1-s4: 1 / min(2, 2) = 0.5
                 served("s1", "s5"),                                       # s1-s5: 1 / min(3, 1) = 1.0
                 served("s1", "p2"))                                       # p2-s1: 1.0, in alice-main
    p = await project(store, directory)
    await p.close()


async def test_reader_stats_with_and_without_a_namespace_filter(store, tmp_path: Path) -> None:
    await _reader_graph(store, tmp_path)
    reader = GraphReader(tmp_path)
    everything = reader.stats(None)
    assert (everything["nodes"], everything["edges"]) == (16, 15)
    assert everything["density"] == round(15 / (16 * 15), 6)
    assert everything["nodes_by_type"] == {"entity": 8, "fact": 7, "decision": 1, "skill": 0, "episode": 0}
    assert everything["edges_by_type"] == {"DEPENDS_ON": 2, "REFERENCES": 10, "CONFLICTS_WITH": 0, "CO_OCCURS": 3,
                                           "DERIVED_FROM": 0}
    assert everything["by_namespace"] == {ALICE: {"nodes": 5, "edges": 5}, SHARED: {"nodes": 11, "edges": 10}}
    shared = reader.stats([SHARED])
    assert (shared["nodes"], shared["edges"], shared["density"]) == (11, 10, round(10 / (11 * 10), 6))
    assert shared["nodes_by_type"]["decision"] == 0 and shared["edges_by_type"]["DEPENDS_ON"] == 1
    assert shared["by_namespace"] == {SHARED: {"nodes": 11, "edges": 10}}
    assert reader.stats([SHARED, ALICE]) == everything
    assert reader.namespaces() == [ALICE, SHARED]
    reader.close()


async def test_reader_neighbours_prefetch_and_dependants(store, tmp_path: Path) -> None:
    await _reader_graph(store, tmp_path)
    reader = GraphReader(tmp_path)
    assert reader.neighbours(["s1"], [SHARED]) == [   # strongest first, ties by id
        Neighbour("s3", "s1", "DEPENDS_ON", 1.0),
        Neighbour("s5", "s1", "CO_OCCURS", 1.0),
        Neighbour("s4", "s1", "CO_OCCURS", 0.5),
        Neighbour("s2", "s1", "REFERENCES", 0.25, "Redis"),
    ]
    assert [n.memory_id for n in reader.neighbours(["s1"], [SHARED, ALICE])] == ["p1", "p2", "s3", "s5", "s4", "s2"]
    assert [n.memory_id for n in reader.neighbours(["s1", "s3"], [SHARED], limit=2)] == ["s5", "s4"]  # hits excluded
    # entities are per namespace: p1 reaches p3 through alice's Redis, never s1/s2 through the shared one
    assert reader.neighbours(["p1"], [SHARED, ALICE]) == [Neighbour("s1", "p1", "DEPENDS_ON", 1.0),
                                                          Neighbour("p3", "p1", "REFERENCES", 0.25, "Redis")]
    assert reader.neighbours(["p1"], [SHARED]) == []  # its edges and entity live in alice-main
    assert reader.neighbours([], [SHARED]) == [] and reader.neighbours(["s1"], []) == []

    assert reader.prefetch(["s1"], [SHARED]) == [Neighbour("s5", "s1", "CO_OCCURS", 1.0)]  # s4 (0.5) too weak
    assert [n.memory_id for n in reader.prefetch(["s1"], [SHARED, ALICE])] == ["p2", "s5"]
    assert reader.prefetch(["s4"], [SHARED]) == []
    assert [n.memory_id for n in reader.prefetch(["s4"], [SHARED], min_weight=0.4)] == ["s1"]
    assert reader.prefetch(["s1", "s5"], [SHARED]) == []

    assert reader.dependants("s1") == ["p1", "s3"]  # any namespace: a correction cascade crosses them
    assert reader.dependants("s3") == []
    reader.close()


def test_a_reader_over_a_missing_database_reads_an_empty_graph(tmp_path: Path) -> None:
    reader = GraphReader(tmp_path / "nothing-here")
    stats = reader.stats(None)
    assert (stats["nodes"], stats["edges"], stats["density"], stats["by_namespace"]) == (0, 0, 0.0, {})
    assert reader.neighbours(["a"], [SHARED]) == [] and reader.prefetch(["a"], [SHARED]) == []
    assert reader.dependants("a") == [] and reader.namespaces() == []
    reader.close()


# --------------------------------------------------------------------------- 7. plan_prune


async def test_plan_prune_over_the_projected_graph(store, tmp_path: Path) -> None:
    await append(store,
                 commit("e1", "Redis listens on port 6379"),
                 correct("e1", "Kafka carries events"),                 # shared Redis and port 6379: isolated
                 commit("c1", "Postgres stores orders"), commit("c2", "Postgres stores invoices"),
                 conflict("k1", "c1", "c2"), resolved("k1"),
                 commit("d1", "Grafana shows dashboards"), commit("d2", "Grafana shows alerts"),
                 conflict("k2", "d1", "d2"), conflict("k3", "d2", "d1"),  # redundant CONFLICTS_WITH
                 commit("l1", "low one"), commit("l2", "low two"), commit("a", "alpha"), commit("b", "beta"),
                 *[served("l1") for _ in range(7)], *[served("l2") for _ in range(7)],
                 served("l1", "l2"),                                     # 1 / min(8, 8) = 0.125 < 0.15
                 served("a", "b"))                                       # 1.0, single evidence: kept
    p = await project(store, tmp_path)
    await p.close()
    events = await store.read()
    first, last = events[0].wall_ms, events[-1].wall_ms

    def plan(days: float, directory: Path = tmp_path, late: bool = True) -> PrunePlan:
        """At `days` after the last event (`late`) or just before `days` after the first one."""
        now = last + int(days * DAY_MS) + HOUR_MS if late else first + int(days * DAY_MS) - HOUR_MS
        conn = sqlite3.connect(directory / DB_FILE)
        try:
            return plan_prune(conn, now)
        finally:
            conn.close()

    isolated = (ent(SHARED, "redis"), ent(SHARED, "6379", "port"))  # by id
    merge = (("CONFLICTS_WITH:d2:d1", "CONFLICTS_WITH:d1:d2"),)  # equal evidence: the smaller id is kept
    assert plan(0) == PrunePlan(merged_edges=merge)  # merging does not wait
    assert plan(7, late=False) == PrunePlan(merged_edges=merge)
    assert plan(7) == PrunePlan(archived_edges=("CONFLICTS_WITH:c1:c2",), merged_edges=merge)
    assert plan(14, late=False).removed_nodes == ()
    assert plan(14).removed_nodes == isolated  # entity nodes only: memories leave by deletion
    # a weak CO_OCCURS (< 0.3) without a co-recall for 14 days goes to weight 0 (seed 2.5.3)
    assert "CO_OCCURS:l1:l2" not in plan(14, late=False).archived_edges
    assert plan(14).archived_edges == ("CONFLICTS_WITH:c1:c2", "CO_OCCURS:l1:l2")
    assert plan(30, late=False).removed_edges == ()
    assert plan(30) == PrunePlan(removed_nodes=isolated, removed_edges=("CO_OCCURS:l1:l2",),
                                 archived_edges=("CONFLICTS_WITH:c1:c2",), merged_edges=merge)
    assert plan(37, late=False).removed_edges == ("CO_OCCURS:l1:l2",)
    assert plan(37) == PrunePlan(removed_nodes=isolated, removed_edges=("CONFLICTS_WITH:c1:c2", "CO_OCCURS:l1:l2"),
                                 merged_edges=merge)  # 7 + 30 days after the resolution: gone, not archived

    # CO_OCCURS in both directions cannot come from the projector (pairs are ordered): hand-made in a copy
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    shutil.copy(tmp_path / DB_FILE, scratch / DB_FILE)
    conn = sqlite3.connect(scratch / DB_FILE)
    conn.execute("INSERT INTO graph_cooccurs (source_id, target_id, weight, namespace, evidence_count, created_at) "
                 "VALUES ('b', 'a', 1.0, 'shared', 3, ?)", (iso_from_ms(last),))
    conn.commit()
    conn.close()
    assert plan(0, scratch).merged_edges == (*merge, ("CO_OCCURS:a:b", "CO_OCCURS:b:a"))  # most evidence kept

    # the plan, appended as graph.pruned, is what the projector applies
    p = GraphProjector(tmp_path)
    await p.apply(await append(store, pruned(plan(30))))
    await p.close()
    n, e = nodes(tmp_path), edges(tmp_path)
    assert not set(isolated) & set(n) and "CO_OCCURS:l1:l2" not in e and "CONFLICTS_WITH:d2:d1" not in e
    assert e["CONFLICTS_WITH:c1:c2"]["weight"] == 0.0 and e["CONFLICTS_WITH:d1:d2"]["evidence_count"] == 2
    assert plan(30) == PrunePlan()
