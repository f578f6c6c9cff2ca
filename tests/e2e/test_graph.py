"""The knowledge graph through the HTTP API: nodes and edges from commits, navigation, the pattern
language, CO_OCCURS from recalls, graph expansion of sparse recalls, the correction cascade,
namespace isolation and bad inputs."""

from __future__ import annotations

import pytest

from eventually import eventually
from tests.e2e.conftest import assert_error
from tests.e2e.test_feedback import _commit, _versions


async def _query(api, key, text: str, after: str = "", status_expected: int = 200) -> dict:
    status, body = await api.call("POST", "/api/v1/graph/query", key, json={"query": text, "after": after})
    assert status == status_expected, body
    return body


async def test_commits_build_nodes_and_edges_and_navigation_scores_paths(api):
    key = await api.register("alice")
    a, _ = await _commit(api, key, "ComfyUI listens on port 8188 on the GPU box")
    b, pos = await _commit(api, key, "restart ComfyUI after every driver update", category="decision")
    status, stats = await api.call("GET", "/api/v1/graph/stats", key, params={"after": pos})
    assert status == 200, stats
    assert stats["nodes_by_type"]["fact"] == 1 and stats["nodes_by_type"]["decision"] == 1
    assert stats["nodes_by_type"]["entity"] >= 2 and stats["edges_by_type"]["REFERENCES"] >= 3
    assert stats["by_namespace"]["alice-main"]["nodes"] == stats["nodes"] and 0 < stats["density"] < 1
    # the two memories meet at the shared entity: a 2-hop path scored 0.5 x 0.5
    status, nav = await api.call("POST", "/api/v1/graph/navigate", key, json={"source": a, "target": b})
    assert status == 200, nav
    best = nav["paths"][0]
    assert best["score"] == 0.25 and len(best["edges"]) == 2
    assert best["nodes"][0]["id"] == a and best["nodes"][-1]["id"] == b
    assert best["nodes"][1]["type"] == "entity" and best["nodes"][1]["label"] == "ComfyUI"
    assert len(nav["paths"]) <= 3 and [p["score"] for p in nav["paths"]] == sorted(
        (p["score"] for p in nav["paths"]), reverse=True)
    # the pattern language
    rows = (await _query(api, key, 'MATCH (m)-[:REFERENCES]->(e:entity {label: "ComfyUI"}) RETURN m.id '
                                   'LIMIT 10'))["rows"]
    assert sorted(r[0] for r in rows) == sorted([a, b])
    body = await _query(api, key, "MATCH (m:decision) RETURN count(*)")
    assert body["rows"] == [[1]]


async def test_isolation_and_bad_inputs(api):
    alice = await api.register("alice")
    bob = await api.register("bob")
    a, pos = await _commit(api, alice, "ComfyUI listens on port 8188")
    s, _ = await _commit(api, bob, "ComfyUI is shared knowledge", namespace="shared")
    await api.settle()
    status, stats = await api.call("GET", "/api/v1/graph/stats", bob)
    assert status == 200 and "alice-main" not in stats["by_namespace"] and "shared" in stats["by_namespace"]
    status, body = await api.call("POST", "/api/v1/graph/navigate", bob, json={"source": s, "target": a})
    assert status == 404
    assert_error(body, "not_found")
    rows = (await _query(api, bob, "MATCH (n) RETURN n.namespace"))["rows"]
    assert {r[0] for r in rows} == {"shared"}
    status, stats = await api.call("GET", "/api/v1/graph/stats")     # the admin sees every graph
    assert {"alice-main", "shared"} <= set(stats["by_namespace"])
    for bad in ({}, {"source": a}, {"source": a, "target": s, "max_hops": 4}, {"source": a, "target": s, "max_hops": 0},
                {"source": 5, "target": s}, {"source": "x" * 600, "target": s}):
        status, body = await api.call("POST", "/api/v1/graph/navigate", alice, json=bad)
        assert status == 400, (bad, body)
        assert_error(body, "invalid_request")
    for bad in ("MATCH (n RETURN n", "RETURN n", "MATCH (n:planet) RETURN n", "MATCH (n) RETURN m",
                "MATCH (n) WHERE n.label ~ 'x' RETURN n", "MATCH (n) RETURN n LIMIT 100000", "DROP TABLE graph_nodes"):
        body = await _query(api, alice, bad, status_expected=422)
        assert_error(body, "invalid_query")
    body = await _query(api, alice, "MATCH (n {label: \"x' OR 1=1 --\"}) RETURN n")
    assert body["rows"] == []
    for bad in ({}, {"query": ""}, {"query": 5}, {"query": "MATCH (n) RETURN n" + " " * 3000}):
        status, body = await api.call("POST", "/api/v1/graph/query", alice, json=bad)
        assert status == 400, (bad, body)
        assert_error(body)


async def test_repeated_recalls_create_co_occurs_edges_and_prefetch(api):
    key = await api.register("alice")
    a, _ = await _commit(api, key, "the staging cluster uses Postgres 15")
    b, _ = await _commit(api, key, "staging cluster backups go to the S3 bucket zhiyi-staging")
    await api.settle()
    for _ in range(3):
        _, res = await api.recall(key, "staging cluster", cache=False, top_k=5)
        assert {a, b} <= {r["memory_id"] for r in res["results"]}
    await api.settle()
    rows = (await _query(api, key, "MATCH (x)-[r:CO_OCCURS]-(y) RETURN r.weight, r.evidence_count"))["rows"]
    assert rows and rows[0] == [1.0, 3]           # 3 co-recalls / min(3, 3)
    # the gateway follows the graph's CO_OCCURS edges in memory, up to PrefetchPartners.max_age_s behind
    async def with_prefetch():
        _, res = await api.recall(key, "Postgres version on staging", cache=False, top_k=1)
        return res if res["prefetch"] else None

    res = await eventually(with_prefetch, timeout_s=3, interval_s=0.05, what="a recall with prefetch partners")
    assert res["results"][0]["memory_id"] == a
    assert [p["memory_id"] for p in res["prefetch"]] == [b] and res["prefetch"][0]["weight"] == 1.0


async def test_a_sparse_recall_is_expanded_through_the_graph(api):
    key = await api.register("alice")
    port, _ = await _commit(api, key, "ComfyUI listens on port 8188 on the GPU box")
    boot, _ = await _commit(api, key, "the render queue starts at 07:00 every weekday", depends_on=[port])
    await _commit(api, key, "lunch is at noon")
    await api.settle()
    _, res = await api.recall(key, "which port does ComfyUI listen on", cache=False, min_score=0.3)
    ids = [r["memory_id"] for r in res["results"]]
    assert ids[0] == port and boot in ids, res
    expanded = next(r for r in res["results"] if r["memory_id"] == boot)
    assert expanded["expansion"] == "graph" and expanded["via"].startswith(port)
    assert expanded["score"] < res["results"][0]["score"]
    _, plain = await api.recall(key, "which port does ComfyUI listen on", cache=False)
    assert all("expansion" not in r for r in plain["results"][:2])


async def test_a_correction_marks_its_dependants_stale(api):
    key = await api.register("alice")
    cfg, _ = await _commit(api, key, "nginx serves the API on port 8080")
    dep, _ = await _commit(api, key, "the health check probes http://localhost:8080/health", depends_on=[cfg])
    other, _ = await _commit(api, key, "the team standup is at 09:30")
    await api.settle()
    status, body = await api.call("POST", "/api/v1/feedback/correct", key, json={
        "memory_id": cfg, "content": "nginx serves the API on port 8443", "reason": "moved to TLS"})
    assert status == 200, body
    await api.settle()
    v = await _versions(api, key, dep, "")
    assert v["freshness"] == "stale" and v["version"] == 2
    last = v["versions"][-1]
    assert last["reason"].startswith(f"stale: depends on {cfg}") and "moved to TLS" in last["reason"]
    assert last["trigger"] == cfg
    assert (await _versions(api, key, other, ""))["freshness"] == "fresh"
    _, res = await api.recall(key, "health check URL", cache=False)
    hit = next(r for r in res["results"] if r["memory_id"] == dep)
    assert hit["freshness"] == "stale" and any(w.startswith("stale") for w in hit["warnings"])


@pytest.fixture
def settings_overrides(request) -> dict:
    return getattr(request, "param", {})


# the test's own conflict events are the only verdicts (the auto-resolution rules would settle c1: one source)
@pytest.mark.parametrize("settings_overrides", [{"conflict_auto_resolve": False}], indirect=True)
async def test_conflict_edges_and_pruning_with_the_injected_clock(api):
    from events.catalogue import ConflictDetected, ConflictResolved, new_event
    from gateway.http.appkeys import STORE

    key = await api.register("alice")
    a, _ = await _commit(api, key, "ComfyUI listens on port 8188")
    b, _ = await _commit(api, key, "ComfyUI listens on port 8189")
    c, _ = await _commit(api, key, "the printer on floor 2 is an HP LaserJet")
    store = api.client.app[STORE]
    await store.append([new_event(ConflictDetected("c1", "alice-main", (a, b), 0.9), ns="alice-main", agent="system")])
    await api.settle()
    rows = (await _query(api, key, "MATCH (x)-[r:CONFLICTS_WITH]->(y) RETURN x.id, y.id, r.weight"))["rows"]
    assert rows == [[a, b, 0.9]]
    await store.append([new_event(ConflictResolved("c1", "alice-main", "latest_wins", b), ns="alice-main",
                                  agent="system")])
    status, _ = await api.call("DELETE", f"/api/v1/distilled/{c}", key)
    assert status == 200
    await api.settle()
    printer = (await _query(api, key, "MATCH (e:entity) WHERE e.label CONTAINS 'LaserJet' RETURN e.id"))["rows"]
    assert printer, "the deleted memory's entities stay until a prune"
    status, report = await api.call("POST", "/api/v1/admin/tick", json={})      # nothing is old enough yet
    assert status == 200 and not any(report["pruned"].values()), report["pruned"]
    api.clock.advance(days=15)
    status, report = await api.call("POST", "/api/v1/admin/tick", json={})
    assert status == 200, report
    assert {r[0] for r in printer} <= set(report["pruned"]["removed_nodes"])     # isolated for 14 days
    assert report["pruned"]["archived_edges"] == [f"CONFLICTS_WITH:{a}:{b}"]     # resolved 7 days ago
    await api.settle()
    assert (await _query(api, key, "MATCH (e:entity) WHERE e.label CONTAINS 'LaserJet' RETURN e.id"))["rows"] == []
    rows = (await _query(api, key, "MATCH (x)-[r:CONFLICTS_WITH]->(y) RETURN r.weight"))["rows"]
    assert rows == [[0.0]]
    ranks = [r[0] for r in (await _query(api, key, "MATCH (n) RETURN n.pagerank"))["rows"]]
    assert len(set(ranks)) > 1 and abs(sum(ranks) / len(ranks) - 1.0) < 1e-6     # PageRank after the prune
    api.clock.advance(days=31)
    status, report = await api.call("POST", "/api/v1/admin/tick", json={})
    assert report["pruned"]["removed_edges"] == [f"CONFLICTS_WITH:{a}:{b}"]      # archived 30 days: deleted
