"""Deep consolidation through the HTTP API (seed 3.5 flow 5): a run clusters the memories, prunes the
graph and recomputes PageRank, calibrates the decay rates, mines patterns (one L2 memory per cluster,
derived from its members, never twice) and records its report; the forget run protects well-connected
memories (plan E4.3)."""

from __future__ import annotations

from gateway.http.appkeys import GRAPH
from tests.e2e.conftest import ADMIN_KEY, assert_error
from tests.e2e.test_feedback import _commit, _versions

DEPLOYS = ["We deploy the {} service with docker compose on the staging host",
           "The {} service is deployed with docker compose onto the staging host",
           "Deploy {} to the staging host using docker compose",
           "Our {} service ships to staging through docker compose",
           "For staging, the {} service runs under docker compose",
           "Staging deploys of {} use docker compose on the host"]
REPLIES = ["用户喜欢用中文回复，{}", "回复用户时请用中文，{}", "用户希望回答使用中文，{}", "和用户交流请使用中文，{}",
           "用户偏好中文回复，{}", "请用中文回复用户，{}"]


async def _store(api, key: str) -> dict[str, list[str]]:
    ids: dict[str, list[str]] = {"deploy": [], "reply": []}
    for i, text in enumerate(DEPLOYS):
        ids["deploy"].append((await _commit(api, key, text.format(f"billing-{i}"), category="decision"))[0])
    for i, text in enumerate(REPLIES):
        ids["reply"].append((await _commit(api, key, text.format(["简洁一些", "不要太长", "语气友好", "直接回答",
                                                                  "少用术语", "先给结论"][i]),
                                           category="preference"))[0])
    for text in ("The GPU is an RTX 3050 with 4 GB", "Redis listens on port 6379", "The NAS backs up at 02:00"):
        await _commit(api, key, text)
    return ids


async def test_a_run_clusters_mines_patterns_prunes_and_reports(api):
    key = await api.register("alice")
    ids = await _store(api, key)
    status, run = await api.call("POST", "/api/v1/admin/consolidate", json={})
    assert status == 200, run
    steps = {s["step"]: s for s in run["steps"]}
    assert {n: s["status"] for n, s in steps.items()} == {
        "clusters": "ok", "prune": "ok", "calibration": "ok", "backtrace": "not_run", "patterns": "ok"}
    assert steps["backtrace"]["detail"]["reason"] == "needs an LLM (LLM_ENDPOINT)"
    report = run["report"]
    assert report["memories"] == 15 and report["clusters_found"] >= 2
    assert report["patterns_written"] == 2 and report["failed_steps"] == [] and report["regressions"] == []
    # one pattern per topic, in alice's namespace, derived from the topic's memories
    by_members = {frozenset(p["members"]): p for p in run["patterns"]}
    deploy = next(p for m, p in by_members.items() if m <= set(ids["deploy"]))
    reply = next(p for m, p in by_members.items() if m <= set(ids["reply"]))
    assert deploy["category"] == "decision" and len(deploy["members"]) >= 3 and deploy["namespace"] == "alice-main"
    assert reply["category"] == "preference" and len(reply["members"]) >= 3
    pattern = await _versions(api, key, deploy["memory_id"], run["position"])
    assert pattern["kind"] == "L2" and pattern["category"] == "pattern"
    assert "Recurring decision" in pattern["content"] and "docker" in pattern["content"]
    assert "中文" in (await _versions(api, key, reply["memory_id"], run["position"]))["content"]
    edges = await _derived_edges(api, deploy["memory_id"])
    assert edges == sorted(deploy["members"])
    # the pattern is recalled like any memory
    _, recalled = await api.recall(key, "how do we deploy to staging", top_k=20, after=run["position"], cache=False)
    assert deploy["memory_id"] in [r["memory_id"] for r in recalled["results"]]
    # calibration: every class reported (this young store has no history: each keeps its base)
    rates = {r["decay_class"]: r for r in run["decay_rates"]}
    assert set(rates) == {"system_fact", "user_pref", "proj_context", "tool_usage", "code_snippet"}
    assert all(r["status"] == "kept" and r["rate"] == r["base"] for r in rates.values())
    # a second run mines nothing new; the report is in GET /api/v1/consolidation
    status, again = await api.call("POST", "/api/v1/admin/consolidate", json={})
    assert status == 200 and again["report"]["patterns_written"] == 0 and again["report"]["memories"] == 17
    status, state = await api.call("GET", "/api/v1/consolidation", params={"limit": 2, "after": again["position"]})
    assert status == 200
    assert [r["run_id"] for r in state["runs"]] == [again["run_id"], run["run_id"]]
    assert state["runs"][1]["report"]["patterns_written"] == 2 and state["runs"][1]["trigger"] == "manual"
    assert state["steps"]["clusters"]["failures"] == 0 and not state["steps"]["backtrace"]["disabled"]
    assert len(state["decay_rates"]) == 5 and state["notices"] == []


async def _derived_edges(api, memory_id: str) -> list[str]:
    await api.settle()
    graph = api.client.app[GRAPH]
    return graph.with_connection(lambda conn: [r[0] for r in conn.execute(
        "SELECT target_id FROM graph_edges WHERE source_id = ? AND relation_type = 'DERIVED_FROM' ORDER BY 1",
        (memory_id,))], [])


async def test_consolidation_endpoints_are_admin_only_and_validate(api):
    key = await api.register("alice")
    before = await api.log_length()
    for method, path in (("POST", "/api/v1/admin/consolidate"), ("GET", "/api/v1/consolidation"),
                         ("POST", "/api/v1/admin/consolidation/steps/clusters/enable")):
        status, body = await api.call(method, path, key, json={} if method == "POST" else None)
        assert status == 403 and body["error"]["code"] == "admin_required", (path, body)
    status, body = await api.call("POST", "/api/v1/admin/consolidate", json={"steps": ["clusters"]})
    assert status == 400
    assert_error(body, "unknown_field")
    status, body = await api.call("POST", "/api/v1/admin/consolidate", json=[1])
    assert status == 400
    assert_error(body)
    status, body = await api.call("GET", "/api/v1/consolidation", params={"limit": 0})
    assert status == 400
    status, body = await api.call("POST", "/api/v1/admin/consolidation/steps/dreaming/enable", json={})
    assert status == 404
    assert_error(body, "not_found")
    status, body = await api.call("POST", "/api/v1/admin/consolidation/steps/clusters/enable", ADMIN_KEY)
    assert status == 200 and body == {"step": "clusters", "disabled": False, "changed": False, "position": ""}
    assert await api.log_length() == before


async def test_forgetting_evicts_well_connected_memories_last(api):
    """Plan E4.3: the LRU pass takes a memory of graph degree > 5 only after every one of degree <= 5."""
    key = await api.register("alice")
    hub, _ = await _commit(api, key, "The shared build cache lives on the NAS")       # the oldest: LRU's first pick
    dependants = [(await _commit(api, key, f"Build job {i} reads the shared build cache", depends_on=[hub]))[0]
                  for i in range(6)]
    after = await api.settle()
    assert (await _degree(api, hub)) > 5 and all([await _degree(api, d) <= 5 for d in dependants])
    status, plan = await api.call("POST", "/api/v1/admin/forget", json={"capacity": 6, "dry_run": True})
    assert status == 200 and [f["memory_id"] for f in plan["forgotten"]] == [dependants[0]], plan
    status, plan = await api.call("POST", "/api/v1/admin/forget", json={"capacity": 1, "dry_run": True})
    assert status == 200 and {f["memory_id"] for f in plan["forgotten"]} == set(dependants)
    status, run = await api.call("POST", "/api/v1/admin/forget", json={"capacity": 6})
    assert status == 200 and [f["memory_id"] for f in run["forgotten"]] == [dependants[0]]
    assert (await _versions(api, key, hub, run["position"]))["is_deleted"] is False
    assert after


async def _degree(api, memory_id: str) -> int:
    return (api.client.app[GRAPH].degrees([memory_id])).get(memory_id, 0)
