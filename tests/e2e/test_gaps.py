"""Knowledge gaps (seed 3.2.2, flow 3) through the real app: three misses on a topic open a gap, it is
classified, the gap trigger repairs it (C: a wider search; B: a synonym, verified by the recalls) and it
closes; the agent is pushed both; GET /api/v1/gaps and the closure rate in /api/v1/metrics/self."""

from __future__ import annotations

from gateway.http.appkeys import TRIGGERS
from tests.e2e.conftest import ADMIN_KEY, assert_error
from tests.e2e.push_client import listen
from tests.e2e.test_feedback import _commit

STORE = ["The Kubernetes cluster lives on three bare-metal nodes in rack 4",
         "Our container orchestrator upgrades happen on the first Sunday of the month",
         "Grafana dashboards are exported to the ops-dashboards repository",
         "The GPU is an RTX 3050 with 4 GB of VRAM",
         "Redis listens on port 6379 on the staging host"]


async def _miss_three_times(api, key: str, query: str, **fields) -> None:
    for _ in range(3):
        status, res = await api.recall(key, query, cache=False, **fields)
        assert status == 200
        assert all(r["score"] < 0.32 for r in res["results"]), res["results"][:1]     # a miss each time
    await api.settle()


async def _gaps(api, key: str, **params) -> dict:
    status, body = await api.call("GET", "/api/v1/gaps", key, params=params)
    assert status == 200, body
    return body


async def _run_gap_trigger(api) -> dict:
    [fired] = [f for f in await api.client.app[TRIGGERS].run_due() if f["name"] == "gap"]
    assert fired["status"] == "fired", fired
    await api.settle()
    return fired


async def test_a_type_c_gap_is_repaired_by_a_wider_search_and_closes(api):
    alice = await api.register("alice")
    for text in STORE:
        await _commit(api, alice, text)
    ear = await listen(api.client, "alice", alice)
    # the answer is in alice-main, but she narrows her recalls to `shared`
    await _miss_three_times(api, alice, "where does the kubernetes cluster live", namespace="shared")
    detected = await ear.next("gap.detected")
    assert detected["data"]["gap_type"] == "C" and detected["data"]["query"] == "where does the kubernetes cluster live"
    [gap] = (await _gaps(api, alice, status="open"))["gaps"]
    assert gap["gap_id"] == detected["data"]["gap_id"] and gap["evidence"]["reason"] == "namespace"
    assert gap["evidence"]["namespace"] == "alice-main" and len(gap["queries"]) == 3
    fired = await _run_gap_trigger(api)
    assert fired["result"]["filled"] == [gap["gap_id"]]
    filled = await ear.next("gap.filled")
    assert filled["data"]["gap_id"] == gap["gap_id"] and filled["data"]["repair"] == "retry"
    assert filled["data"]["filled_count"] == 3 and len(filled["data"]["memory_ids"]) >= 1
    body = await _gaps(api, alice)
    assert body["gaps"][0]["status"] == "closed" and body["closure_rate"] == 1.0
    assert (body["detected"], body["closed"]) == (1, 1)
    status, metrics = await api.call("GET", "/api/v1/metrics/self", params={"after": filled["position"]})
    closure = next(m for m in metrics["metrics"] if m["name"] == "gap_closure")
    assert closure["value"] == 1.0 and closure["status"] == "healthy"
    await ear.close()


async def test_a_type_b_gap_gets_a_synonym_verified_by_its_recalls(api):
    alice = await api.register("alice")
    for text in STORE:
        await _commit(api, alice, text)
    ear = await listen(api.client, "alice", alice)
    await _miss_three_times(api, alice, "where is k8s")
    detected = await ear.next("gap.detected")
    assert detected["data"]["gap_type"] == "B", detected
    fired = await _run_gap_trigger(api)
    assert fired["result"]["filled"] == [detected["data"]["gap_id"]], fired
    filled = await ear.next("gap.filled")
    assert filled["data"]["repair"] == "synonym" and filled["data"]["detail"].startswith("synonym k8s -> ")
    status, synonyms = await api.call("GET", "/api/v1/admin/synonyms", params={"after": filled["position"]})
    assert [(s["term"], s["namespace"]) for s in synonyms["synonyms"]] == [("k8s", "alice-main")]
    # the agent's own recall now finds it above the floor
    status, res = await api.recall(alice, "where is k8s", cache=False)
    assert res["results"][0]["content"] == STORE[0] and res["results"][0]["score"] >= 0.32
    assert (await _gaps(api, alice, status="closed"))["count"] == 1
    await ear.close()


async def test_gaps_are_an_agents_own_and_a_hit_between_misses_opens_none(api):
    alice, bob = await api.register("alice"), await api.register("bob")
    for text in STORE:
        await _commit(api, alice, text)
    for _ in range(2):
        await api.recall(alice, "what is the weather in Paris", cache=False)
    await api.recall(alice, "what is the weather in Paris", cache=False, min_score=-1.0)   # ... min_score is hers,
    await api.settle()                                                                  # the floor still applies
    [gap] = (await _gaps(api, alice))["gaps"]
    assert gap["gap_type"] == "A" and gap["status"] == "open"
    assert (await _gaps(api, bob))["gaps"] == []                               # bob sees none of alice's
    assert len((await _gaps(api, ADMIN_KEY))["gaps"]) == 1                     # the admin sees all
    # two misses, a hit on the same topic, one more miss: no gap
    for query in ("GPU memory size", "GPU memory size"):
        await api.recall(bob, query, cache=False, namespace="shared")
    await api.recall(bob, "GPU memory size", cache=False, include_namespaces=["alice-main"])   # a hit
    await api.recall(bob, "GPU memory size", cache=False, namespace="shared")
    await api.settle()
    assert (await _gaps(api, bob))["gaps"] == []
    status, err = await api.call("GET", "/api/v1/gaps", alice, params={"status": "pending"})
    assert status == 400
    assert_error(err, "invalid_request")
