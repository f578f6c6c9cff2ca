"""Feedback and corrections through the HTTP API: counts, provenance chain, volatility, deprecation,
version conflicts, permissions and bad inputs (which write nothing)."""

from __future__ import annotations

from tests.e2e.conftest import assert_error


async def _commit(api, key: str, content: str, **fields) -> tuple[str, str]:
    status, body = await api.commit(key, content, **fields)
    assert status == 201, body
    return body["memory_id"], body["position"]


async def _versions(api, key: str, memory_id: str, after: str) -> dict:
    status, body = await api.call("GET", f"/api/v1/memory/{memory_id}/versions", key, params={"after": after})
    assert status == 200, body
    return body


async def test_useful_and_not_useful_are_counted(api):
    key = await api.register("alice")
    mid, _ = await _commit(api, key, "The staging database runs PostgreSQL 15")
    for path in ("useful", "useful", "not-useful"):
        status, body = await api.call("POST", f"/api/v1/feedback/{path}", key,
                                      json={"memory_id": mid, "reason": "checked today"})
        assert status == 201 and body["memory_id"] == mid
    v = await _versions(api, key, mid, body["position"])
    assert (v["useful_count"], v["not_useful_count"], v["version"]) == (2, 1, 1)  # feedback keeps the version


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
    import asyncio

    key = await api.register("alice")
    mid, pos = await _commit(api, key, "the office wifi is called zhiyi-guest")
    for _ in range(2):
        status, body = await api.recall(key, "office wifi name", after=pos, cache=False)
        assert status == 200 and body["results"][0]["memory_id"] == mid
    for _ in range(100):  # recall.served events are buffered, then projected
        v = await _versions(api, key, mid, pos)
        if v["recall_count"] == 2:
            break
        await asyncio.sleep(0.05)
    assert v["recall_count"] == 2 and v["last_recalled_at"] and v["version"] == 1
