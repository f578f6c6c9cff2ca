"""Ephemeral memories through the real app: a session's memories are forgotten when it closes (reason
`session_closed`), older ones when their TTL passes (`ephemeral_expired`, at the tick); both show in the
versions view and the tombstones; main-namespace memories are never touched."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import assert_error

TOMBSTONES = "/api/v1/admin/tombstones"


@pytest.fixture
def settings_overrides() -> dict:
    return {"ephemeral_ttl_s": 3600}


async def _commit(api, key: str, content: str, **fields) -> str:
    status, body = await api.commit(key, content, **fields)
    assert status == 201, body
    return body["memory_id"]


async def test_closing_a_session_forgets_its_memories(api):
    key = await api.register("alice")
    other = await api.register("bob")
    s1 = [await _commit(api, key, f"scratch {i}", namespace="alice-ephemeral", session_id="s1") for i in range(2)]
    kept = await _commit(api, key, "another session's note", namespace="alice-ephemeral", session_id="s2")
    main = await _commit(api, key, "a lasting fact")
    status, body = await api.commit(key, "not ephemeral", session_id="s1")
    assert status == 400 and body["error"]["details"]["field"] == "session_id"
    status, body = await api.call("POST", "/api/v1/sessions/s1/close", other)      # bob's own (empty) session
    assert status == 200 and body["count"] == 0 and body["namespace"] == "bob-ephemeral"
    status, body = await api.call("POST", "/api/v1/sessions/s1/close", key)
    assert status == 200 and sorted(body["forgotten"]) == sorted(s1) and body["namespace"] == "alice-ephemeral"
    status, again = await api.call("POST", "/api/v1/sessions/s1/close", key)
    assert status == 200 and again["count"] == 0                                    # closed once
    last = await api.settle()
    for memory_id, gone in [*((m, True) for m in s1), (kept, False), (main, False)]:
        status, view = await api.call("GET", f"/api/v1/memory/{memory_id}/versions", key, params={"after": last})
        assert status == 200 and view["is_deleted"] is gone, view
    status, listed = await api.call("GET", TOMBSTONES, params={"reason": "session_closed", "after": last})
    assert sorted(t["original_id"] for t in listed["tombstones"]) == sorted(s1)
    for bad in ("%20", "x" * 129):
        status, body = await api.call("POST", f"/api/v1/sessions/{bad}/close", key)
        assert status == 400, body
        assert_error(body, "invalid_request")


async def test_old_ephemeral_memories_expire_at_the_tick(api):
    key = await api.register("carol")
    old = await _commit(api, key, "yesterday's scratch", namespace="carol-ephemeral")
    main = await _commit(api, key, "a lasting fact")
    await api.settle()
    status, body = await api.call("POST", "/api/v1/admin/tick", json={})
    assert status == 200 and body["forgotten"] == []                     # younger than the TTL (1 h here)
    api.clock.advance(ms=2 * 3600 * 1000)
    status, dry = await api.call("POST", "/api/v1/admin/tick", json={"dry_run": True})
    assert [(f["memory_id"], f["reason"]) for f in dry["forgotten"]] == [(old, "ephemeral_expired")]
    status, body = await api.call("POST", "/api/v1/admin/tick", json={})
    assert [(f["memory_id"], f["reason"]) for f in body["forgotten"]] == [(old, "ephemeral_expired")]
    last = await api.settle()
    status, listed = await api.call("GET", TOMBSTONES, params={"reason": "ephemeral_expired", "after": last})
    assert [t["original_id"] for t in listed["tombstones"]] == [old]
    status, view = await api.call("GET", f"/api/v1/memory/{main}/versions", key, params={"after": last})
    assert view["is_deleted"] is False
