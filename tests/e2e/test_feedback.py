"""Feedback and corrections through the HTTP API: one vote per agent (its latest), provenance chain,
volatility, deprecation, version conflicts, permissions and bad inputs (which write nothing)."""

from __future__ import annotations

from eventually import eventually
from tests.e2e.conftest import assert_error


async def _commit(api, key: str, content: str, **fields) -> tuple[str, str]:
    status, body = await api.commit(key, content, **fields)
    assert status == 201, body
    return body["memory_id"], body["position"]


async def _versions(api, key: str, memory_id: str, after: str) -> dict:
    status, body = await api.call("GET", f"/api/v1/memory/{memory_id}/versions", key, params={"after": after})
    assert status == 200, body
    return body


async def _voters(api, n: int, prefix: str = "voter") -> list[str]:
    """The keys of agents `{prefix}-0` .. `{prefix}-{n-1}` (registered on first use)."""
    return [api.keys.get(f"{prefix}-{i}") or await api.register(f"{prefix}-{i}") for i in range(n)]


async def _vote(api, memory_id: str, useful: int = 0, not_useful: int = 0, *, first: int = 0) -> str:
    """`useful` then `not_useful` votes, each from another agent (voter-{first}, voter-{first+1}, ...)."""
    keys = (await _voters(api, first + useful + not_useful))[first:]
    position = ""
    for key, path in zip(keys, ["useful"] * useful + ["not-useful"] * not_useful):
        status, body = await api.call("POST", f"/api/v1/feedback/{path}", key, json={"memory_id": memory_id})
        assert status == 201, body
        position = body["position"]
    return position


async def _feedback(api, key: str, memory_id: str, *paths: str) -> str:
    for path in paths:
        status, body = await api.call("POST", f"/api/v1/feedback/{path}", key,
                                      json={"memory_id": memory_id, "reason": "checked today"})
        assert status == 201 and body["memory_id"] == memory_id, body
    return body["position"]


async def test_an_agent_changing_its_vote_counts_its_latest(api):
    key = await api.register("alice")
    mid, _ = await _commit(api, key, "The staging database runs PostgreSQL 15")
    position = await _feedback(api, key, mid, "useful", "useful", "not-useful")
    v = await _versions(api, key, mid, position)
    assert (v["useful_count"], v["not_useful_count"], v["version"]) == (0, 1, 1)  # feedback keeps the version
    assert v["quality_score"] == 0.0 and v["importance_factor"] == 1.0
    v = await _versions(api, key, mid, await _feedback(api, key, mid, "useful"))
    assert (v["useful_count"], v["not_useful_count"], v["quality_score"]) == (1, 0, 1.0)


async def test_one_agents_repeated_votes_count_once(api):
    """Six not-useful votes from one agent are one vote: no quality drop, no notice, no forget."""
    alice = await api.register("alice")
    mallory = await api.register("mallory")
    mid, _ = await _commit(api, alice, "the release checklist lives in docs/release.md")
    alone, _ = await _commit(api, alice, "the staging cluster is called stg-2")
    await _feedback(api, alice, mid, "useful")
    position = await _feedback(api, mallory, mid, *["not-useful"] * 6)
    position = await _feedback(api, mallory, alone, *["not-useful"] * 6)
    await api.settle()
    v = await _versions(api, alice, mid, position)
    assert (v["useful_count"], v["not_useful_count"], v["quality_score"]) == (1, 1, 0.5)
    assert v["importance_factor"] == 1.0 and v["quality_notice_at"] == ""
    w = await _versions(api, alice, alone, position)   # quality = 0 / (0 + 1), but one vote decides nothing
    assert (w["useful_count"], w["not_useful_count"], w["importance_factor"], w["quality_notice_at"]) == (0, 1, 1.0, "")
    status, plan = await api.call("POST", "/api/v1/admin/forget", json={"dry_run": True})
    assert status == 200 and plan["forgotten"] == [], plan
    _, recalled = await api.recall(alice, "where is the release checklist", cache=False, after=position)
    hit = next(r for r in recalled["results"] if r["memory_id"] == mid)
    assert not any(warning.startswith("low_quality") for warning in hit.get("warnings", []))


async def test_several_agents_votes_count_once_each(api):
    alice = await api.register("alice")
    mid, _ = await _commit(api, alice, "the VPN password rotates every Monday")
    voters = await _voters(api, 5)
    for key in voters:          # each of five agents says not useful, twice
        position = await _feedback(api, key, mid, "not-useful", "not-useful")
    v = await _versions(api, alice, mid, await _feedback(api, alice, mid, "useful", "useful"))
    assert (v["useful_count"], v["not_useful_count"]) == (1, 5)
    assert round(v["quality_score"], 6) == round(1 / 6, 6) and v["importance_factor"] == 0.5  # < 0.3, >= 5 votes
    status, plan = await api.call("POST", "/api/v1/admin/forget", json={"dry_run": True})
    assert status == 200 and plan["forgotten"] == [{"memory_id": mid, "namespace": "alice-main",
                                                    "reason": "quality_low"}]
    # two of them change their minds: 3 useful / 3 not useful
    for key in voters[:2]:
        position = await _feedback(api, key, mid, "useful")
    v = await _versions(api, alice, mid, position)
    assert (v["useful_count"], v["not_useful_count"], v["quality_score"], v["importance_factor"]) == (3, 3, 0.5, 1.0)
    status, plan = await api.call("POST", "/api/v1/admin/forget", json={"dry_run": True})
    assert status == 200 and plan["forgotten"] == []


async def test_a_correction_is_a_new_version_with_its_provenance(api):
    key = await api.register("alice")
    mid, _ = await _commit(api, key, "nginx listens on port 8080", source="config_parse")
    status, body = await api.call("POST", "/api/v1/feedback/correct", key, json={
        "memory_id": mid, "content": "nginx listens on port 8443", "reason": "moved to TLS",
        "source": "user_verbal", "trigger": "deploy 2026-12-01", "expected_version": 1})
    assert status == 200 and body["version"] == 2, body
    v = await _versions(api, key, mid, body["position"])
    assert v["content"] == "nginx listens on port 8443" and v["version"] == 2 and not v["volatile"]
    first, second = v["versions"]
    assert (first["version"], first["content"], first["reason"]) == (1, "nginx listens on port 8080", "initial")
    assert (second["version"], second["content"], second["reason"], second["source"], second["trigger"],
            second["updated_by"]) == (2, "nginx listens on port 8443", "moved to TLS", "user_verbal",
                                      "deploy 2026-12-01", "alice")
    _, recalled = await api.recall(key, "which port does nginx listen on", top_k=1, after=body["position"],
                                   cache=False)
    assert recalled["results"][0]["content"] == "nginx listens on port 8443"
    assert recalled["results"][0]["version"] == 2
    # a stale expected_version is a conflict, and nothing is written
    before = await api.log_length()
    status, body = await api.call("POST", "/api/v1/feedback/correct", key, json={
        "memory_id": mid, "content": "x", "reason": "y", "expected_version": 1})
    assert status == 409
    assert_error(body, "version_conflict")
    assert body["error"]["details"]["current_version"] == 2
    assert await api.log_length() == before


async def test_three_corrections_make_a_memory_volatile(api):
    key = await api.register("alice")
    mid, _ = await _commit(api, key, "the backup job runs at 03:00")
    for hour in ("04:00", "05:00", "02:00"):
        status, body = await api.call("POST", "/api/v1/feedback/correct", key,
                                      json={"memory_id": mid, "content": f"the backup job runs at {hour}",
                                            "reason": "schedule changed"})
        assert status == 200, body
    v = await _versions(api, key, mid, body["position"])
    assert v["volatile"] is True and v["version"] == 4 and len(v["versions"]) == 4
    _, recalled = await api.recall(key, "when does the backup job run", top_k=1, after=body["position"],
                                   cache=False)
    assert any(w.startswith("volatile") for w in recalled["results"][0]["warnings"])


async def test_deprecate_marks_the_memory_and_its_history(api):
    key = await api.register("alice")
    mid, _ = await _commit(api, key, "use Python 3.9 for the tooling")
    status, body = await api.call("POST", "/api/v1/feedback/deprecate", key,
                                  json={"memory_id": mid, "reason": "we moved to 3.11"})
    assert status == 200 and body["version"] == 2
    v = await _versions(api, key, mid, body["position"])
    assert v["status"] == "deprecated" and v["versions"][-1]["reason"] == "deprecated: we moved to 3.11"


async def test_permissions_and_bad_inputs(api):
    alice = await api.register("alice")
    bob = await api.register("bob")
    private, _ = await _commit(api, alice, "alice's note")
    ephemeral, pos = await _commit(api, alice, "alice's scratch", namespace="alice-ephemeral")
    before = await api.log_length()
    cases = [
        ("/api/v1/feedback/useful", {}, 400, "invalid_request"),
        ("/api/v1/feedback/useful", {"memory_id": "bad id!"}, 400, "invalid_request"),
        ("/api/v1/feedback/useful", {"memory_id": "no-such-memory"}, 404, "not_found"),
        ("/api/v1/feedback/useful", {"memory_id": ephemeral}, 404, "not_found"),       # others' scratch is invisible
        ("/api/v1/feedback/not-useful", {"memory_id": private, "reason": 5}, 400, "invalid_request"),
        ("/api/v1/feedback/deprecate", {"memory_id": private}, 400, "invalid_request"),  # reason required
        ("/api/v1/feedback/deprecate", {"memory_id": private, "reason": "old"}, 403, "forbidden"),
        ("/api/v1/feedback/correct", {"memory_id": private, "content": "x", "reason": "y"}, 403, "forbidden"),
        ("/api/v1/feedback/correct", {"memory_id": private, "content": "", "reason": "y"}, 400, "invalid_request"),
        ("/api/v1/feedback/correct", {"memory_id": private, "content": "x"}, 400, "invalid_request"),
        ("/api/v1/feedback/correct", {"memory_id": private, "content": "x", "reason": "y",
                                      "expected_version": "one"}, 400, "invalid_request"),
    ]
    for path, payload, want, code in cases:
        status, body = await api.call("POST", path, bob, json=payload)
        assert status == want, (path, payload, body)
        assert_error(body, code)
    status, body = await api.call("POST", "/api/v1/feedback/useful", bob, json=["not", "an", "object"])
    assert status == 400
    status, body = await api.call("POST", "/api/v1/feedback/correct", json={"memory_id": private, "content": "x",
                                                                            "reason": "y"})  # admin, no agent_id
    assert status == 400
    assert_error(body, "agent_id_required")
    assert await api.log_length() == before
    # another agent's main namespace is readable: bob may say it helped, but not see alice's scratch
    status, _ = await api.call("POST", "/api/v1/feedback/useful", bob, json={"memory_id": private})
    assert status == 201
    status, body = await api.call("GET", f"/api/v1/memory/{ephemeral}/versions", bob, params={"after": pos})
    assert status == 404
    assert_error(body, "not_found")
    status, body = await api.call("GET", "/api/v1/memory/no-such/versions", alice)
    assert status == 404


async def test_recalls_are_counted_on_the_memories_they_served(api):

    key = await api.register("alice")
    mid, pos = await _commit(api, key, "the office wifi is called zhiyi-guest")
    for _ in range(2):
        status, body = await api.recall(key, "office wifi name", after=pos, cache=False)
        assert status == 200 and body["results"][0]["memory_id"] == mid
    async def recalled_twice():  # recall.served events are buffered, then projected
        v = await _versions(api, key, mid, pos)
        return v if v["recall_count"] == 2 else None

    v = await eventually(recalled_twice, timeout_s=5, interval_s=0.05, what="recall_count 2 in the versions view")
    assert v["recall_count"] == 2 and v["last_recalled_at"] and v["version"] == 1
