"""GET /api/v1/admin/audit through the real app: who did what from the log, filtered by type, agent and
namespace, paged with `next` without loss or repeat; the admin only; bad filters 400."""

from __future__ import annotations

from tests.e2e.conftest import assert_error

PATH = "/api/v1/admin/audit"


async def test_who_did_what_filtered_and_paged(api):
    alice = await api.register("alice")
    await api.register("bob")
    await api.commit(alice, "alice's own note")
    await api.commit(api.keys["bob"], "bob's note")
    status, _ = await api.call("POST", "/api/v1/commit", json={"content": "written for bob", "agent_id": "bob"})
    assert status == 201
    await api.settle()
    status, body = await api.call("GET", PATH, params={"type": "memory.committed", "limit": 1000})
    assert status == 200 and body["next"] is None
    who = [(e["agent"], e["by"], e["data"]["content"]) for e in body["events"]]
    assert who == [("alice", "", "alice's own note"), ("bob", "", "bob's note"), ("bob", "admin", "written for bob")]
    assert all(e["at"] and e["origin"] == "e2e" for e in body["events"])
    status, body = await api.call("GET", PATH, params={"agent_id": "bob", "type": "memory.*,agent.registered"})
    assert [e["type"] for e in body["events"]] == ["agent.registered", "memory.committed", "memory.committed"]
    status, body = await api.call("GET", PATH, params={"namespace": "alice-main", "type": "memory.committed"})
    assert [e["data"]["content"] for e in body["events"]] == ["alice's own note"]
    # pages of 2 give the whole log once, in order
    status, everything = await api.call("GET", PATH, params={"limit": 1000})
    seen, cursor = [], None
    while True:
        status, page = await api.call("GET", PATH, params={"limit": 2, **({"cursor": cursor} if cursor else {})})
        assert status == 200 and len(page["events"]) <= 2
        seen += [e["position"] for e in page["events"]]
        cursor = page["next"]
        if cursor is None:
            break
    assert seen == [e["position"] for e in everything["events"]] and len(seen) >= 6
    status, body = await api.call("GET", PATH, params={"since": "1h", "type": "agent.registered"})
    assert len(body["events"]) == 2
    status, body = await api.call("GET", PATH, params={"until": "2000-01-01"})
    assert body["events"] == [] and body["next"] is None


async def test_the_admin_only_and_bad_filters(api):
    key = await api.register("alice")
    status, body = await api.call("GET", PATH, key)
    assert status == 403
    assert_error(body, "admin_required")
    for params in ({"since": "yesterday-ish"}, {"cursor": "abc"}, {"limit": "0"}, {"agent_id": "bad id!"},
                   {"namespace": "no/slash"}, {"colour": "red"}):
        status, body = await api.call("GET", PATH, params=params)
        assert status == 400, (params, body)
