"""Memories that learn, through the HTTP API with the injected clock: the quality notice and its
7-day deadline, the 180-day stale rule, the PassiveValidator, the scheduler's tick endpoint, and
recall ranking by standing."""

from __future__ import annotations

from tests.e2e.conftest import assert_error
from tests.e2e.test_feedback import _commit, _versions, _vote


async def _tick(api, **body) -> dict:
    status, report = await api.call("POST", "/api/v1/admin/tick", json=body)
    assert status == 200, report
    return report


async def _tombstones(api, memory_id: str, after: str) -> list[dict]:
    status, body = await api.call("GET", "/api/v1/admin/tombstones", params={"memory_id": memory_id, "after": after})
    assert status == 200, body
    return body["tombstones"]


async def test_quality_notice_then_seven_days_without_improvement_deprecates_and_forgets(api):
    key = await api.register("alice")
    mid, _ = await _commit(api, key, "the build cache lives on the NFS share")
    await _vote(api, mid, useful=1, not_useful=4)   # five agents, quality 0.2: low (< 0.3), not rule 1 (< 0.2)
    await api.settle()
    v = await _versions(api, key, mid, "")
    assert v["quality_score"] == 0.2 and v["importance_factor"] == 0.5 and v["quality_notice_at"]
    _, recalled = await api.recall(key, "where is the build cache", cache=False)
    hit = next(r for r in recalled["results"] if r["memory_id"] == mid)
    assert any(w.startswith("low_quality") for w in hit["warnings"])
    # six days later: still inside the deadline, and rule 1 does not apply (0.2 is not < 0.2)
    api.clock.advance(days=6)
    report = await _tick(api)
    assert report["deprecated"] == [] and report["forgotten"] == []
    # eight days after the notice: deprecated, and the same tick's forget run moves it to the tombstones
    api.clock.advance(days=2)
    report = await _tick(api)
    assert [d["memory_id"] for d in report["deprecated"]] == [mid]
    assert report["forgotten"] == [{"memory_id": mid, "namespace": "alice-main", "reason": "deprecated"}]
    v = await _versions(api, key, mid, report["position"])
    assert v["is_deleted"] is True and v["status"] == "deprecated"
    assert [h["reason"].split(":")[0] for h in v["versions"]] == ["initial", "deprecated", "forgotten"]
    tomb = await _tombstones(api, mid, report["position"])
    assert len(tomb) == 1 and tomb[0]["reason"] == "deprecated"
    assert tomb[0]["content_snapshot"] == "the build cache lives on the NFS share"
    _, recalled = await api.recall(key, "where is the build cache", cache=False, after=report["position"])
    assert mid not in [r["memory_id"] for r in recalled["results"]]
    # a second tick decides nothing new
    again = await _tick(api)
    assert (again["deprecated"], again["downweighted"], again["forgotten"]) == ([], [], [])


async def test_a_recovered_memory_is_not_deprecated(api):
    key = await api.register("alice")
    mid, _ = await _commit(api, key, "release branches are cut on Thursdays")
    await _vote(api, mid, useful=1, not_useful=4)
    await api.settle()
    assert (await _versions(api, key, mid, ""))["quality_notice_at"]
    await _vote(api, mid, useful=3, first=5)    # three more agents: 4/8 = 0.5, recovered, the notice is withdrawn
    await api.settle()
    v = await _versions(api, key, mid, "")
    assert v["quality_notice_at"] == "" and v["importance_factor"] == 1.0
    api.clock.advance(days=8)
    report = await _tick(api)
    assert report["deprecated"] == [] and report["forgotten"] == []


async def test_stale_and_unrecalled_for_180_days_drops_importance_to_a_tenth(api):
    key = await api.register("alice")
    snippet, _ = await _commit(api, key, "use jq -r '.items[]' to list the pods", decay_class="code_snippet")
    fact, _ = await _commit(api, key, "the cluster runs in eu-west-1", decay_class="system_fact")
    core, _ = await _commit(api, key, "the on-call phone is +1-555-0100", decay_class="code_snippet", tier="core")
    await api.settle()
    # 80 days: the snippet decayed to the floor (0.012/day), so it reads as stale; the fact did not
    api.clock.advance(days=80)
    _, recalled = await api.recall(key, "how do I list the pods with jq", cache=False, diversity=0.0)
    hit = next(r for r in recalled["results"] if r["memory_id"] == snippet)
    assert hit["freshness"] == "stale" and any(w.startswith("stale") for w in hit["warnings"])
    assert (await _tick(api))["downweighted"] == []    # stale, but not 180 days unrecalled yet
    # 181 days after the commit: stale and unrecalled for 180 days -> importance factor 0.1
    api.clock.advance(days=101)
    report = await _tick(api)
    assert [d["memory_id"] for d in report["downweighted"]] == [snippet]   # the fact is not stale; core is immune
    v = await _versions(api, key, snippet, report["position"])
    assert v["importance_factor"] == 0.1 and v["freshness"] == "stale"
    assert (await _versions(api, key, fact, ""))["freshness"] == "fresh"
    assert (await _versions(api, key, core, ""))["decay"] == 1.0
    assert (await _tick(api))["downweighted"] == []


async def test_a_commit_that_restates_a_memory_validates_it(api):
    alice = await api.register("alice")
    mid, _ = await _commit(api, alice, "ComfyUI listens on port 8188 on the GPU box", source="config_parse",
                           namespace="shared")
    await api.settle()
    before = await _versions(api, alice, mid, "")
    assert before["confidence"] == 0.7 and before["freshness"] == "fresh"
    bob = await api.register("bob")
    await _commit(api, bob, "ComfyUI is reachable on port 8188")
    await api.settle()
    after = await _versions(api, alice, mid, "")
    assert after["confidence"] == 0.85 and after["freshness"] == "verified"
    # confidence is capped at 1.0
    for i in range(3):
        await _commit(api, bob, f"again: ComfyUI on port 8188 (check {i})")
    await api.settle()
    assert (await _versions(api, alice, mid, ""))["confidence"] == 1.0
    # an unrelated commit validates nothing
    other, _ = await _commit(api, alice, "the coffee machine on floor 3 is broken", namespace="shared")
    await _commit(api, bob, "quarterly planning starts next week")
    await api.settle()
    assert (await _versions(api, alice, other, ""))["confidence"] == 0.5


async def test_recall_ranks_by_standing(api):
    key = await api.register("alice")
    a, _ = await _commit(api, key, "the metrics dashboard is grafana.internal:3000")
    b, _ = await _commit(api, key, "the metrics dashboard is grafana.internal:3000")
    worse = min(a, b)   # equal relevance: without standing, ties go by id, so this one would come first
    await _vote(api, worse, useful=1, not_useful=4)
    await api.settle()
    _, plain = await api.recall(key, "where is the metrics dashboard", cache=False, diversity=0.0,
                                importance_weight=0.0, top_k=2)
    assert [r["memory_id"] for r in plain["results"]] == sorted([a, b])
    _, ranked = await api.recall(key, "where is the metrics dashboard", cache=False, diversity=0.0, top_k=2)
    assert [r["memory_id"] for r in ranked["results"]] == [max(a, b), worse]
    first, second = ranked["results"]
    assert first["quality_score"] == 0.5 and second["quality_score"] == 0.2 and second["score"] < first["score"]
    assert second["importance"] < first["importance"]


async def test_tick_needs_the_admin_key_and_valid_parameters(api):
    key = await api.register("alice")
    await _commit(api, key, "a memory to keep the log non-empty")
    before = await api.log_length()
    status, body = await api.call("POST", "/api/v1/admin/tick", key, json={})
    assert status == 403
    assert_error(body, "admin_required")
    for bad, code in (({"dry_run": "yes"}, "invalid_request"), ({"capacity": 0}, "invalid_request"),
                      ({"capacity": "10"}, "invalid_request"), ([1, 2], "invalid_json")):
        status, body = await api.call("POST", "/api/v1/admin/tick", json=bad)
        assert status == 400, (bad, body)
        assert_error(body, code)
    status, body = await api.call("POST", "/api/v1/admin/tick", data=b"{not json",
                                  headers={"Content-Type": "application/json"})
    assert status == 400
    report = await _tick(api, dry_run=True, capacity=1)
    assert report["dry_run"] is True and report["position"] == ""
    assert await api.log_length() == before
    status, body = await api.call("POST", "/api/v1/recall", key, json={"query": "x", "importance_weight": 2})
    assert status == 400
    assert_error(body, "invalid_request")
