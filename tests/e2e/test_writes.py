"""Registration, commit, batch-commit and delete through the real app, with every bad input."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import ADMIN_KEY, assert_error


async def test_register_returns_a_key_that_works_at_once(api):
    status, body = await api.call("POST", "/api/v1/agents/register",
                                  json={"agent_id": "hermes-a06", "agent_type": "hermes", "namespace": "hermes-main"})
    assert status == 201
    assert body["namespaces"] == ["hermes-main", "hermes-a06-ephemeral", "shared"]
    assert body["ws_endpoint"] == "/api/v1/ws/hermes-a06" and body["position"]   # its push socket
    status, commit = await api.commit(body["api_key"], "ComfyUI 端口: 8188")
    assert status == 201 and commit["namespace"] == "hermes-main" and commit["version"] == 1


async def test_register_rules(api):
    key = await api.register("alice")
    status, body = await api.call("POST", "/api/v1/agents/register", key, json={"agent_id": "eve"})
    assert status == 403
    assert_error(body, "admin_required")
    status, body = await api.call("POST", "/api/v1/agents/register", json={"agent_id": "alice"})
    assert status == 201 and body["api_key"] == key  # the same request again: the same answer
    status, body = await api.call("POST", "/api/v1/agents/register", json={"agent_id": "alice", "agent_type": "coder"})
    assert status == 409
    assert_error(body, "agent_exists")
    status, body = await api.call("POST", "/api/v1/agents/register", json={"agent_id": "bob", "namespace": "alice-main"})
    assert status == 409
    assert_error(body, "namespace_taken")
    for bad in ({}, {"agent_id": "has space"}, {"agent_id": 7}, {"agent_id": "x", "namespace": "shared"}):
        status, body = await api.call("POST", "/api/v1/agents/register", json=bad)
        assert status == 400, bad
        assert_error(body)


async def test_auth_failures_are_401_with_the_error_shape(api):
    for key in (None, "wrong-key"):
        status, body = await api.call("POST", "/api/v1/commit", key, json={"content": "x"})
        assert status == 401
        assert_error(body, "unauthorized")
    status, body = await api.call("GET", "/api/v1/stats", None)
    assert status == 401


async def test_idempotency_key_gives_one_event(api):
    key = await api.register("alice")
    before = await api.log_length()
    headers = {"Idempotency-Key": "commit-42"}
    s1, b1 = await api.call("POST", "/api/v1/commit", key, json={"content": "deploy uses nginx"}, headers=headers)
    s2, b2 = await api.call("POST", "/api/v1/commit", key, json={"content": "deploy uses nginx"}, headers=headers)
    assert (s1, s2) == (201, 200)
    assert b2["memory_id"] == b1["memory_id"] and b2["position"] == b1["position"] and b2["duplicate"]
    assert await api.log_length() == before + 1
    s3, b3 = await api.call("POST", "/api/v1/commit", key, json={"content": "something else"}, headers=headers)
    assert s3 == 422
    assert_error(b3, "idempotency_key_reused")
    assert await api.log_length() == before + 1
    # scoped per agent: bob may use the same key
    bob = await api.register("bob")
    s4, _ = await api.call("POST", "/api/v1/commit", bob, json={"content": "deploy uses nginx"}, headers=headers)
    assert s4 == 201


@pytest.mark.parametrize("settings_overrides", [{"max_body_bytes": 200_000}])
async def test_bad_inputs_get_4xx_and_leave_the_log_unchanged(api, settings_overrides):
    key = await api.register("alice")
    await api.register("bob")
    before = await api.log_length()
    cases = [
        (dict(data=b"{not json", headers={"Content-Type": "application/json"}), 400, "invalid_json"),
        (dict(data=b"[1,2]"), 400, "invalid_json"),
        (dict(data=b""), 400, "invalid_json"),
        (dict(json={"content": 123}), 400, "invalid_request"),
        (dict(json={"content": "x", "tags": "notalist"}), 400, "invalid_request"),
        (dict(json={"content": "x", "category": "rumour"}), 400, "invalid_request"),
        (dict(json={"content": "x" * 16_001}), 400, "invalid_request"),
        (dict(json={"content": "x" * 300_000}), 413, "payload_too_large"),
        (dict(json={"content": "x", "namespace": "bob-main"}), 403, "forbidden"),
        (dict(json={"content": "x", "depends_on": ["no-such-memory"]}), 404, "unknown_dependency"),
        (dict(json={"content": "x", "agent_id": "bob"}), 403, "forbidden"),
        (dict(json={"content": "x"}, headers={"Idempotency-Key": "bad key with spaces"}), 400, "invalid_request"),
    ]
    for kwargs, status, code in cases:
        got, body = await api.call("POST", "/api/v1/commit", key, **kwargs)
        assert got == status, (kwargs, body)
        assert_error(body, code)
    assert await api.log_length() == before


async def test_admin_acts_for_an_agent_only_when_it_names_one(api):
    await api.register("alice")
    before = await api.log_length()
    status, body = await api.commit(ADMIN_KEY, "no agent named")
    assert status == 400
    assert_error(body, "agent_id_required")
    status, body = await api.commit(ADMIN_KEY, "unknown agent", agent_id="ghost")
    assert status == 404
    assert_error(body, "unknown_agent")
    assert await api.log_length() == before
    status, body = await api.commit(ADMIN_KEY, "written for alice", agent_id="alice")
    assert status == 201 and body["namespace"] == "alice-main"


async def test_batch_commit_is_all_or_nothing(api):
    key = await api.register("alice")
    entries = [{"content": f"fact number {i}", "tags": ["batch"]} for i in range(3)]
    status, body = await api.call("POST", "/api/v1/batch-commit", key, json={"entries": entries})
    assert status == 201 and len(body["results"]) == 3 and body["position"] == body["results"][-1]["position"]
    assert len({r["memory_id"] for r in body["results"]}) == 3
    before = await api.log_length()
    commits = await api.count_events("memory.committed")
    for bad, code in (({"entries": entries + [{"content": ""}]}, 400), ({"entries": []}, 400),
                      ({"entries": [{"content": "x"}] * 1001}, 400), ({"entries": "x"}, 400),
                      ({"entries": [{"content": "x", "namespace": "shared"}, {"content": "y", "namespace": "nope"}]},
                       403)):
        status, resp = await api.call("POST", "/api/v1/batch-commit", key, json=bad)
        assert status == code, resp
        assert_error(resp)
    assert await api.log_length() == before
    headers = {"Idempotency-Key": "batch-1"}
    s1, b1 = await api.call("POST", "/api/v1/batch-commit", key, json={"entries": entries}, headers=headers)
    s2, b2 = await api.call("POST", "/api/v1/batch-commit", key, json={"entries": entries}, headers=headers)
    assert (s1, s2) == (201, 200) and b1["results"] == b2["results"]
    assert await api.count_events("memory.committed") == commits + 3   # (reactions may confirm older facts)


async def test_delete_rules(api):
    alice = await api.register("alice")
    bob = await api.register("bob")
    _, mine = await api.commit(alice, "alice private note")
    _, bobs = await api.commit(bob, "bob private note")
    _, shared = await api.commit(bob, "shared fact", namespace="shared")
    before = await api.log_length()
    status, body = await api.call("DELETE", "/api/v1/distilled/does-not-exist", alice)
    assert status == 404
    assert_error(body, "not_found")
    status, body = await api.call("DELETE", f"/api/v1/distilled/{bobs['memory_id']}", alice)
    assert status == 403
    assert_error(body, "forbidden")
    status, body = await api.call("DELETE", f"/api/v1/distilled/{mine['memory_id']}", alice,
                                  json={"expected_version": 7})
    assert status == 409
    assert_error(body, "version_conflict")
    assert body["error"]["details"]["current_version"] == 1
    status, body = await api.call("DELETE", f"/api/v1/distilled/{mine['memory_id']}", alice,
                                  params={"expected_version": "x"})
    assert status == 400
    assert await api.log_length() == before
    status, body = await api.call("DELETE", f"/api/v1/distilled/{mine['memory_id']}", alice,
                                  params={"expected_version": "1"})
    assert status == 200 and body["version"] == 2 and body["position"]
    status, body = await api.call("DELETE", f"/api/v1/distilled/{mine['memory_id']}", alice)
    assert status == 409  # already deleted: a version conflict naming the current version
    assert_error(body, "version_conflict")
    assert body["error"]["details"]["current_version"] == 2
    status, body = await api.call("DELETE", f"/api/v1/distilled/{shared['memory_id']}", alice)
    assert status == 200
    assert await api.log_length() == before + 2


async def test_unknown_route_and_method_use_the_error_shape(api):
    status, body = await api.call("GET", "/api/v1/nope")
    assert status == 404
    assert_error(body, "not_found")
    status, body = await api.call("PUT", "/api/v1/commit", json={})
    assert status == 405
    assert_error(body, "method_not_allowed")
