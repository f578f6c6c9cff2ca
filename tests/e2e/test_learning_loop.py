"""V-value propagation (seed 6.3) and skill crystallisation (seed 6.5) through the real app."""

from __future__ import annotations

from tests.e2e.conftest import ADMIN_KEY, assert_error
from tests.e2e.test_feedback import _commit, _voters


async def test_a_rewarded_trace_values_the_memories_it_served_and_lifts_them_in_ranking(api):
    alice, bob = await api.register("alice"), await api.register("bob")
    a, _ = await _commit(api, alice, "the nightly backup job runs at 02:00 on the NAS")
    b, _ = await _commit(api, alice, "the nightly backup job copies the NAS to the cloud at 02:00")
    await api.settle()
    status, before = await api.recall(alice, "nightly backup job", cache=False, top_k=2, diversity=0)
    assert status == 200 and {r["memory_id"] for r in before["results"]} == {a, b}
    low = before["results"][1]["memory_id"]                 # the one ranked second
    # a traced recall serving both, then its reward
    status, step = await api.recall(alice, "nightly backup job", cache=False, top_k=2, diversity=0, trace_id="t-9")
    assert status == 200
    status, body = await api.call("POST", "/api/v1/trace/vprop", alice, json={"trace_id": "t-9", "reward": 1.0},
                                  headers={"Idempotency-Key": "vp-1"})
    assert status == 200, body
    # one step serving both, no useful votes: alpha = 1, V = 1 x 1.0 + 0 = 1.0 each
    assert body["steps"] == 1 and sorted(m["memory_id"] for m in body["memories"]) == sorted([a, b])
    assert all((m["v_value"], m["alpha"], m["step"]) == (1.0, 1.0, 1) for m in body["memories"])
    again = await api.call("POST", "/api/v1/trace/vprop", alice, json={"trace_id": "t-9", "reward": 1.0},
                           headers={"Idempotency-Key": "vp-1"})
    assert again[0] == 200 and again[1]["position"] == body["position"] and again[1]["duplicate"] is True
    assert await api.count_events("trace.rewarded") == 1
    # a negative reward on a trace serving only the top one sinks it below the other
    top = before["results"][0]["memory_id"]
    status, _ = await api.recall(alice, "nightly backup job", cache=False, top_k=1, diversity=0, trace_id="t-10")
    status, body = await api.call("POST", "/api/v1/trace/vprop", alice, json={"trace_id": "t-10", "reward": -1.0})
    assert status == 200 and [(m["memory_id"], m["v_value"]) for m in body["memories"]] == [(top, -1.0)]
    await api.settle()

    async def reordered():
        _, res = await api.recall(alice, "nightly backup job", cache=False, top_k=2, diversity=0)
        return res if res["results"][0]["memory_id"] == low else None

    from tests.eventually import eventually
    await eventually(reordered, timeout_s=5, interval_s=0.1, what="the valued memory ranked first")
    # another agent's trace is not found; nor is a trace no recall served
    status, err = await api.call("POST", "/api/v1/trace/vprop", bob, json={"trace_id": "t-9", "reward": 1.0})
    assert status == 404
    assert_error(err, "not_found")
    status, err = await api.call("POST", "/api/v1/trace/vprop", alice, json={"trace_id": "t-none", "reward": 1.0})
    assert status == 404
    for bad, field in (({"trace_id": "t-9"}, "reward"), ({"reward": 1}, "trace_id"),
                       ({"trace_id": "t-9", "reward": 2}, "reward"), ({"trace_id": "t 9", "reward": 1}, "trace_id"),
                       ({"trace_id": "t-9", "reward": "1"}, "reward")):
        status, err = await api.call("POST", "/api/v1/trace/vprop", alice, json=bad)
        assert status == 400 and err["error"]["details"]["field"] == field, (bad, err)
    status, err = await api.call("POST", "/api/v1/trace/vprop", alice, json={"trace_id": "t-9", "reward": 1,
                                                                             "bonus": 1})
    assert status == 400
    assert_error(err, "unknown_field")


async def test_a_useful_pattern_crystallises_into_a_skill_whose_trials_move_eta(api):
    alice = await api.register("alice")
    pattern, _ = await _commit(api, alice, "Recurring decision: deploy services with docker compose on staging",
                               category="pattern")
    fact, _ = await _commit(api, alice, "Redis listens on port 6379")
    voters = await _voters(api, 3)
    for key in voters[:2]:
        for mid in (pattern, fact):
            status, _ = await api.call("POST", "/api/v1/feedback/useful", key, json={"memory_id": mid})
            assert status == 201
    await api.settle()
    status, body = await api.call("GET", "/api/v1/skills", alice)
    assert status == 200 and body["skills"] == []                  # two useful votes: not yet
    for mid in (pattern, fact):
        status, _ = await api.call("POST", "/api/v1/feedback/useful", voters[2], json={"memory_id": mid})
    await api.settle()
    status, body = await api.call("GET", "/api/v1/skills", alice)
    [skill] = body["skills"]                                        # the fact never becomes one
    assert skill["memory_id"] == pattern and skill["memory_type"] == "skill"
    assert (skill["alpha"], skill["beta"], skill["eta"], skill["status"]) == (4.0, 1.0, 0.8, "active")
    name = skill["name"]
    assert name.startswith("decision-deploy-services-with-docker-")
    assert await api.count_events("skill.crystallized") == 1
    expected = [(4.0, 2.0, 0.666667, "probation"), (4.0, 3.0, 0.571429, "probation"), (4.0, 4.0, 0.5, "probation"),
                (4.0, 5.0, 0.444444, "retired")]
    for want in expected:
        status, done = await api.call("POST", f"/api/v1/skills/{name}/trial", alice, json={"success": False})
        assert status == 200, done
        assert (done["alpha"], done["beta"], done["eta"], done["status"]) == want
    status, body = await api.call("GET", "/api/v1/skills", alice, params={"status": "retired",
                                                                          "after": done["position"]})
    assert [s["name"] for s in body["skills"]] == [name] and body["skills"][0]["trials"] == 4
    status, done = await api.call("POST", f"/api/v1/skills/{name}/trial", ADMIN_KEY, json={"success": True})
    assert status == 200 and (done["eta"], done["status"]) == (0.5, "probation")
    # errors
    status, err = await api.call("POST", "/api/v1/skills/no-such-skill/trial", alice, json={"success": True})
    assert status == 404
    assert_error(err, "not_found")
    for bad in ({}, {"success": "yes"}, {"success": True, "extra": 1}):
        status, err = await api.call("POST", f"/api/v1/skills/{name}/trial", alice, json=bad)
        assert status == 400, (bad, err)
    status, err = await api.call("GET", "/api/v1/skills", alice, params={"status": "great"})
    assert status == 400
    bob = await api.register("bob")                     # alice's skill lives in alice-main: bob may read it
    status, body = await api.call("GET", "/api/v1/skills", bob)
    assert status == 200 and [s["name"] for s in body["skills"]] == [name]
