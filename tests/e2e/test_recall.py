"""Recall through the real app: read-your-writes, namespaces, languages, audit, bad inputs."""

from __future__ import annotations

import pytest

from eventually import eventually
from tests.e2e.conftest import ADMIN_KEY, assert_error


async def _events_of_type(api, etype: str) -> list:
    from gateway.http.appkeys import STORE

    return [e for e in await api.client.app[STORE].read() if e.type == etype]


async def test_commit_is_recallable_with_after(api):
    key = await api.register("alice")
    _, c = await api.commit(key, "The staging database runs PostgreSQL 15 on port 5433", tags=["db"])
    status, body = await api.recall(key, "which port does the staging database use?", after=c["position"])
    assert status == 200
    top = body["results"][0]
    assert top["memory_id"] == c["memory_id"] and top["content"].startswith("The staging database")
    assert top["namespace"] == "alice-main" and top["tags"] == ["db"] and top["version"] == 1
    assert top["category"] == "fact" and top["source"] == "agent_inference" and top["freshness"] == "fresh"
    assert top["timestamp"].endswith("Z") and 0 < top["score"] <= 1.0
    from events import positions
    assert positions.reached(body["position"], c["position"]) and body["took_ms"] >= 0


async def test_english_recall_ranks_the_relevant_memory_first(api):
    key = await api.register("alice")
    facts = ["The user prefers short, direct answers with the conclusion first",
             "Nginx reverse proxy forwards port 80 to the app on 8080",
             "The GPU is an RTX 3050 with 4 GB of memory",
             "Backups run every night at 3:00 via cron"]
    _, b = await api.call("POST", "/api/v1/batch-commit", key, json={"entries": [{"content": f} for f in facts]})
    status, body = await api.recall(key, "how much video memory does the graphics card have", after=b["position"])
    assert status == 200 and body["results"][0]["content"] == facts[2]
    status, body = await api.recall(key, "when are backups taken?", top_k=2, after=b["position"])
    assert body["results"][0]["content"] == facts[3] and len(body["results"]) == 2


async def test_chinese_recall_ranks_the_relevant_memory_first(api):
    key = await api.register("hermes")
    facts = ["牧尘偏好：话少直接，结论先行", "ComfyUI 端口是 8189，因为 8188 被占用",
             "主力机是 Deepin 25，显卡 RTX 3050，内存 16GB", "每天凌晨三点自动备份数据库"]
    _, b = await api.call("POST", "/api/v1/batch-commit", key, json={"entries": [{"content": f} for f in facts]})
    status, body = await api.recall(key, "ComfyUI 用哪个端口？", after=b["position"])
    assert status == 200 and body["results"][0]["content"] == facts[1]
    for query, expected in (("回答应该简短直接吗", facts[0]), ("显卡是什么型号", facts[2]),
                            ("数据库什么时候备份", facts[3])):
        status, body = await api.recall(key, query, after=b["position"])
        assert body["results"][0]["content"] == expected, query


async def test_namespaces_are_isolated_unless_included(api):
    alice = await api.register("alice")
    bob = await api.register("bob")
    _, p1 = await api.commit(bob, "Bob's private deployment checklist for the billing service")
    _, p2 = await api.commit(bob, "Bob's scratch note about billing", namespace="bob-ephemeral")
    _, p3 = await api.commit(alice, "Shared: the billing service is owned by the payments team", namespace="shared")
    after = p3["position"]
    _, body = await api.recall(alice, "billing service deployment", after=after)
    assert {r["namespace"] for r in body["results"]} == {"shared"}
    assert body["namespaces"] == ["alice-main", "alice-ephemeral", "shared"]
    _, body = await api.recall(alice, "billing service deployment", include_namespaces=["bob-main"], after=after)
    assert p1["memory_id"] in {r["memory_id"] for r in body["results"]}
    assert p2["memory_id"] not in {r["memory_id"] for r in body["results"]}
    status, body = await api.recall(alice, "billing", include_namespaces=["bob-ephemeral"])
    assert status == 403
    assert_error(body, "forbidden")
    _, body = await api.recall(alice, "billing", namespace="shared", after=after)
    assert [r["namespace"] for r in body["results"]] == ["shared"]
    _, body = await api.recall(bob, "scratch note billing", after=after)
    assert p2["memory_id"] in {r["memory_id"] for r in body["results"]}


async def test_deleted_memories_are_not_recalled(api):
    key = await api.register("alice")
    _, c = await api.commit(key, "The old API token lives in vault path secret/api")
    _, d = await api.call("DELETE", f"/api/v1/distilled/{c['memory_id']}", key)
    _, body = await api.recall(key, "where is the API token", after=d["position"])
    assert c["memory_id"] not in {r["memory_id"] for r in body["results"]}


async def test_min_score_and_get_variant(api):
    key = await api.register("alice")
    _, c = await api.commit(key, "Redis runs with appendonly yes and appendfsync everysec")
    status, body = await api.call("GET", "/api/v1/recall", key,
                                  params={"query": "redis durability settings", "top_k": "3", "after": c["position"]})
    assert status == 200 and body["results"][0]["memory_id"] == c["memory_id"]
    _, body = await api.call("GET", "/api/v1/recall", key,
                             params={"query": "redis durability settings", "min_score": "0.99"})
    assert body["results"] == []
    status, body = await api.call("GET", "/api/v1/recall", key, params={"query": "x"},
                                  headers={"X-Zhiyi-After": c["position"]})
    assert status == 200


async def test_recall_served_is_appended_asynchronously(api):
    key = await api.register("alice")
    _, c = await api.commit(key, "the cache TTL is one hour")
    _, body = await api.recall(key, "cache ttl", after=c["position"])
    served = await eventually(lambda: _events_of_type(api, "recall.served"), timeout_s=1,
                              what="a recall.served event in the log")
    assert served[0].data.query == "cache ttl" and served[0].agent == "alice"
    assert list(served[0].data.result_ids) == [r["memory_id"] for r in body["results"]]


async def test_admin_recall_without_agent_searches_shared(api):
    key = await api.register("alice")
    _, c = await api.commit(key, "shared runbook: restart with systemctl restart zhiyid", namespace="shared")
    status, body = await api.recall(ADMIN_KEY, "how to restart", after=c["position"])
    assert status == 200 and body["namespaces"] == ["shared"] and body["results"][0]["memory_id"] == c["memory_id"]


@pytest.mark.slow  # ~11 s, nearly all of it the app's shutdown (its teardown)
@pytest.mark.parametrize("settings_overrides", [{"projection_wait_s": 0.3, "run_projectors": False}])
async def test_after_beyond_the_projections_times_out_with_504(api, settings_overrides):
    key = await api.register("alice")
    _, c = await api.commit(key, "never projected: the projectors do not run")
    status, body = await api.recall(key, "anything", after=c["position"])
    assert status == 504
    assert_error(body, "projection_lag")
    # a position beyond the end of the log was returned by no write: 422 at once, not a 5 s wait
    status, body = await api.recall(key, "anything", after="99999999999999-0")
    assert status == 422 and body["error"]["details"]["field"] == "after"
    assert_error(body, "unprocessable")
    # the scheduler decides on the projections it names, and says which ones it waited for
    status, body = await api.call("POST", "/api/v1/admin/tick", json={})
    assert status == 504 and body["error"]["details"]["projections"] == ["memories", "activity"]
    assert_error(body, "projection_lag")


async def test_recall_bad_inputs(api):
    key = await api.register("alice")
    for bad in ({}, {"query": ""}, {"query": 5}, {"query": "x", "top_k": 0}, {"query": "x", "top_k": 101},
                {"query": "x", "top_k": "3"}, {"query": "x", "after": "yesterday"},
                {"query": "x", "include_namespaces": "bob-main"}, {"query": "x", "min_score": 2},
                {"query": "x" * 2001}, {"query": "x", "namespace": "bad ns"}):
        status, body = await api.call("POST", "/api/v1/recall", key, json=bad)
        assert status == 400, (bad, body)
        assert_error(body)
    status, body = await api.call("GET", "/api/v1/recall", key, params={"query": "x", "top_k": "many"})
    assert status == 400
    assert_error(body)
