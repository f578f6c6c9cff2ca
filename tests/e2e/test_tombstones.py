"""GET /api/v1/admin/tombstones through the HTTP API: a deprecated memory evicted by a forget run is
listed with its content at eviction; filters, paging, read-your-writes, admin only, validation."""

from __future__ import annotations

from datetime import datetime

from events import positions
from tests.e2e.conftest import ADMIN_KEY, assert_error
from tests.e2e.test_feedback import _commit

PATH = "/api/v1/admin/tombstones"


async def test_a_forget_run_leaves_tombstones(api):
    key = await api.register("alice")
    old, _ = await _commit(api, key, "the build server is jenkins.example.org")
    kept, _ = await _commit(api, key, "the build server is ci.example.org")
    status, _ = await api.call("POST", "/api/v1/feedback/deprecate", key, json={"memory_id": old, "reason": "moved"})
    assert status == 200
    status, empty = await api.call("GET", PATH)
    assert status == 200 and empty["tombstones"] == [] and empty["count"] == 0  # nothing forgotten yet

    status, run = await api.call("POST", "/api/v1/admin/forget", json={})
    assert status == 200 and run["forgotten"] == [{"memory_id": old, "namespace": "alice-main",
                                                   "reason": "deprecated"}], run
    status, body = await api.call("GET", PATH, params={"after": run["position"]})
    assert status == 200, body
    assert body["count"] == 1 and positions.reached(body["position"], run["position"]) and len(body["tombstones"]) == 1
    stone = body["tombstones"][0]
    assert set(stone) == {"id", "original_id", "content_snapshot", "namespace", "reason", "merged_into",
                          "deleted_at", "version", "position", "restored_at"}
    assert (stone["original_id"], stone["reason"], stone["namespace"]) == (old, "deprecated", "alice-main")
    assert stone["content_snapshot"] == "the build server is jenkins.example.org"
    assert stone["merged_into"] == "" and stone["position"] == run["position"] and stone["version"] == 3
    # deleted_at is the event's (HLC) time, in ISO 8601
    deleted_ms = datetime.fromisoformat(stone["deleted_at"]).timestamp() * 1000
    assert stone["deleted_at"].endswith("Z") and abs(deleted_ms - int(run["position"].split("-")[0])) < 1000

    # a second run (LRU above capacity): newest first, filters, paging
    newer, _ = await _commit(api, key, "the build server moved to buildkite")
    status, lru = await api.call("POST", "/api/v1/admin/forget", json={"capacity": 1, "namespace": "alice-main"})
    assert status == 200 and lru["forgotten"] == [{"memory_id": kept, "namespace": "alice-main", "reason": "lru"}]
    status, body = await api.call("GET", PATH, headers={"X-Zhiyi-After": lru["position"]})
    assert status == 200 and body["count"] == 2 and positions.reached(body["position"], lru["position"])
    assert [(t["original_id"], t["reason"]) for t in body["tombstones"]] == [(kept, "lru"), (old, "deprecated")]
    assert newer not in {t["original_id"] for t in body["tombstones"]}
    status, mine = await api.call("GET", PATH, params={"memory_id": old})
    assert status == 200 and [t["original_id"] for t in mine["tombstones"]] == [old] and mine["count"] == 1
    status, dep = await api.call("GET", PATH, params={"reason": "lru", "namespace": "alice-main"})
    assert status == 200 and [t["original_id"] for t in dep["tombstones"]] == [kept]
    status, none = await api.call("GET", PATH, params={"reason": "merged"})
    assert status == 200 and none["tombstones"] == [] and none["count"] == 0 and none["position"]
    status, none = await api.call("GET", PATH, params={"namespace": "shared"})
    assert status == 200 and none["tombstones"] == [] and none["count"] == 0
    status, page = await api.call("GET", PATH, params={"limit": "1", "offset": "1"})
    assert status == 200 and [t["original_id"] for t in page["tombstones"]] == [old] and page["count"] == 2
    status, page = await api.call("GET", PATH, params={"offset": "2"})
    assert status == 200 and page["tombstones"] == [] and page["count"] == 2


async def test_tombstones_need_the_admin_key_and_valid_parameters(api):
    key = await api.register("alice")
    status, body = await api.call("GET", PATH, key)
    assert status == 403
    assert_error(body, "admin_required")
    status, body = await api.call("GET", PATH, None)
    assert status == 401
    assert_error(body, "unauthorized")
    for bad in ({"limit": "0"}, {"limit": "1001"}, {"limit": "ten"}, {"limit": "-1"}, {"offset": "-1"},
                {"offset": "x"}, {"reason": "bored"}, {"namespace": "bad ns"}, {"memory_id": "has space"},
                {"after": "yesterday"}, {"limit": "１"}):
        status, body = await api.call("GET", PATH, ADMIN_KEY, params=bad)
        assert status == 400, (bad, body)
        assert_error(body, "invalid_request")
        assert body["error"]["details"]["field"] == next(iter(bad)), body
    status, body = await api.call("GET", PATH, params={"limit": "1000", "offset": "0"})
    assert status == 200 and body["tombstones"] == []


async def test_the_openapi_document_describes_tombstones(api):
    status, doc = await api.call("GET", "/api/v1/openapi.json", None)
    assert status == 200
    op = doc["paths"][PATH]["get"]
    assert {p["name"] for p in op["parameters"]} >= {"namespace", "memory_id", "reason", "limit", "offset", "after"}
    props = doc["components"]["schemas"]["Tombstone"]["properties"]
    assert {"id", "original_id", "content_snapshot", "namespace", "reason", "merged_into", "deleted_at"} <= set(props)
