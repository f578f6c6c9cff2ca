"""Forget runs through the HTTP API: a memory five agents voted not useful is down-weighted at once and
moved out by the next run (seed 3.3.1 rule 1), deprecated ones go next, then LRU above capacity;
recall never returns a forgotten memory."""

from __future__ import annotations

from tests.e2e.conftest import ADMIN_KEY, assert_error
from tests.e2e.test_feedback import _commit, _versions, _vote


async def test_five_not_useful_down_weight_at_once_and_the_next_run_forgets(api):
    key = await api.register("alice")
    bad, _ = await _commit(api, key, "the VPN password rotates every Monday")
    good, _ = await _commit(api, key, "the VPN gateway is vpn.example.org")
    position = await _vote(api, bad, not_useful=5)     # five agents, one vote each
    v = await _versions(api, key, bad, position)
    assert v["quality_score"] == 0.0 and v["importance_factor"] == 0.5  # at once, before any run
    status, plan = await api.call("POST", "/api/v1/admin/forget", json={"dry_run": True})
    assert status == 200 and plan["forgotten"] == [{"memory_id": bad, "namespace": "alice-main",
                                                    "reason": "quality_low"}]
    status, run = await api.call("POST", "/api/v1/admin/forget", json={})
    assert status == 200 and run["count"] == 1 and run["position"]
    v = await _versions(api, key, bad, run["position"])
    assert v["is_deleted"] is True and v["versions"][-1]["reason"] == "forgotten: quality_low"
    status, tombs = await api.call("GET", "/api/v1/admin/tombstones", params={"memory_id": bad, "after": run["position"]})
    assert status == 200 and [(t["reason"], t["content_snapshot"]) for t in tombs["tombstones"]] == [
        ("quality_low", "the VPN password rotates every Monday")]
    _, recalled = await api.recall(key, "VPN password rotation", after=run["position"], cache=False)
    assert bad not in [r["memory_id"] for r in recalled["results"]]
    assert good in [r["memory_id"] for r in recalled["results"]]
    # a forgotten memory can no longer be corrected
    status, body = await api.call("POST", "/api/v1/feedback/correct", key,
                                  json={"memory_id": bad, "content": "x", "reason": "y"})
    assert status == 404
    # the next run has nothing left to do
    status, again = await api.call("POST", "/api/v1/admin/forget", json={})
    assert status == 200 and again["count"] == 0 and again["position"] == ""


async def test_deprecated_then_lru_above_capacity(api):
    key = await api.register("alice")
    ids = [(await _commit(api, key, f"deploy note number {i}"))[0] for i in range(5)]
    core, _ = await _commit(api, key, "the oldest-looking but core fact", tier="core")
    status, body = await api.call("POST", "/api/v1/feedback/deprecate", key,
                                  json={"memory_id": ids[3], "reason": "superseded"})
    assert status == 200
    status, run = await api.call("POST", "/api/v1/admin/forget", json={"capacity": 3, "namespace": "alice-main"})
    assert status == 200, run
    reasons = {f["memory_id"]: f["reason"] for f in run["forgotten"]}
    # 6 live: ids[3] deprecated; 5 remain, capacity 3: the two oldest never-recalled go; core never
    assert reasons == {ids[3]: "deprecated", ids[0]: "lru", ids[1]: "lru"}
    _, recalled = await api.recall(key, "deploy note number", top_k=10, after=run["position"], cache=False,
                                   diversity=0.0)
    assert {r["memory_id"] for r in recalled["results"]} == {ids[2], ids[4], core}


async def test_forget_needs_the_admin_key_and_valid_parameters(api):
    key = await api.register("alice")
    before = await api.log_length()
    status, body = await api.call("POST", "/api/v1/admin/forget", key, json={})
    assert status == 403
    assert_error(body, "admin_required")
    for bad in ({"capacity": 0}, {"capacity": "many"}, {"dry_run": "yes"}, {"namespace": "bad ns"}, [1, 2]):
        status, body = await api.call("POST", "/api/v1/admin/forget", ADMIN_KEY, json=bad)
        assert status == 400, bad
        assert_error(body)
    assert await api.log_length() == before
