"""Bad input never answers 500 (issue 11 point 7), unknown names are refused, stats and agent ids
do not leak or collide (point 8): through the real app, every answer in the one JSON error shape."""

from __future__ import annotations


import orjson

from tests.e2e.conftest import ADMIN_KEY, assert_error
from tests.e2e.raw_http import send_raw

async def _openapi(api) -> dict:
    status, doc = await api.call("GET", "/api/v1/openapi.json", None)
    assert status == 200
    return doc


async def _replica_key(api) -> str:
    """The key of replica `rep-1` (the `{instance_id}` of `_concrete`): its routes take nothing else."""
    status, body = await api.call("POST", "/api/v1/admin/replicas", json={"instance_id": "rep-1"})
    assert status == 201
    return body["replica_key"]


def _concrete(path: str) -> str:
    return path.replace("{memory_id}", "m-1").replace("{episode_id}", "ep-1").replace("{name}", "decay") \
        .replace("{step}", "clusters").replace("{instance_id}", "rep-1").replace("{agent_id}", "alice") \
        .replace("{session_id}", "s1")


async def _raw(api, request: bytes) -> tuple[int, dict]:
    """Send bytes the client library would refuse to build; parse the status line and the JSON body."""
    server = api.client.server
    status, head, body = await send_raw(server.host, server.port, request)
    assert b"application/json" in head.lower(), head
    return status, orjson.loads(body)


async def test_a_non_utf8_api_key_is_a_401(api):
    status, body = await _raw(api, b"GET /api/v1/stats HTTP/1.1\r\nHost: t\r\nX-API-Key: \xff\xfe\x80key\r\n"
                                   b"Connection: close\r\n\r\n")
    assert status == 401
    assert_error(body, "unauthorized")


async def test_a_body_that_is_not_gzip_is_a_400_on_every_post_route(api):
    doc = await _openapi(api)
    posts = [path for path, ops in doc["paths"].items() if "post" in ops]
    assert len(posts) >= 15
    replica = await _replica_key(api)
    for path in posts:
        key = replica if path.startswith("/api/v1/replicas/") else ADMIN_KEY   # a replica's route: its key only
        status, body = await api.call("POST", _concrete(path), key, data=b'{"not": "gzip"}',
                                      headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})
        assert status == 400, (path, status, body)
        assert_error(body, "bad_request")


async def test_unicode_digits_and_odd_integers_in_the_query_are_400(api):
    key = await api.register("alice")
    for path, params in (("/api/v1/bootstrap", {"limit": "²"}), ("/api/v1/eval/history", {"limit": "²"}),
                         ("/api/v1/eval/history", {"limit": "١٠"}), ("/api/v1/admin/synonyms", {"limit": "²"}),
                         ("/api/v1/admin/tombstones", {"offset": "²"}), ("/api/v1/recall", {"query": "x", "top_k": "²"}),
                         ("/api/v1/recall", {"query": "x", "min_score": "nan"}),
                         ("/api/v1/recall", {"query": "x", "cache": "maybe"}),
                         ("/api/v1/bootstrap", {"limit": " 5"}), ("/api/v1/bootstrap", {"limit": "1_0"})):
        status, body = await api.call("GET", path, ADMIN_KEY if "admin" in path else key, params=params)
        assert status == 400, (path, params, body)
        assert_error(body, "invalid_request")
        assert body["error"]["details"]["field"] in params, body


async def test_expected_version_minus_minus_one_is_a_400(api):
    key = await api.register("alice")
    _, c = await api.commit(key, "to be deleted")
    for bad in ("--1", "-1", "0", "1.5", "²", "", "99999999999"):
        status, body = await api.call("DELETE", f"/api/v1/distilled/{c['memory_id']}", key,
                                      params={"expected_version": bad})
        assert status == 400, (bad, body)
        assert_error(body, "invalid_request")
    status, body = await api.call("DELETE", f"/api/v1/distilled/{c['memory_id']}", key,
                                  params={"expected_version": "1"})
    assert status == 200 and body["version"] == 2


async def test_unknown_body_fields_are_refused_on_every_route_with_a_body(api):
    key = await api.register("alice")
    replica = await _replica_key(api)
    doc = await _openapi(api)
    checked = 0
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            if "requestBody" not in op:
                continue
            as_who = replica if path.startswith("/api/v1/replicas/") else ADMIN_KEY
            status, body = await api.call(method.upper(), _concrete(path), as_who, json={"namspace": "alice-main"})
            assert status == 400, (method, path, body)
            assert_error(body, "unknown_field")
            assert body["error"]["details"] == {"field": "namspace", "in": "body"}, body
            checked += 1
    assert checked >= 16
    # nested objects too: a typo inside a batch entry names its place
    status, body = await api.call("POST", "/api/v1/batch-commit", key,
                                  json={"entries": [{"content": "a"}, {"content": "b", "namspace": "shared"}]})
    assert status == 400 and body["error"]["details"]["field"] == "entries[1].namspace"
    assert await api.log_length() == 2   # only the registration and the replica key: nothing was written


async def test_unknown_query_parameters_are_refused_on_every_route(api):
    key = await api.register("alice")
    replica = await _replica_key(api)
    doc = await _openapi(api)
    for path, ops in doc["paths"].items():
        for method in ops:
            as_who = replica if path.startswith("/api/v1/replicas/") else key
            status, body = await api.call(method.upper(), _concrete(path), as_who, params={"limt": "3"})
            assert status == 400, (method, path, body)
            assert_error(body, "unknown_field")
            assert body["error"]["details"] == {"field": "limt", "in": "query"}
    # documented parameters still work, and explicit nulls are refused rather than read as absent
    status, _ = await api.call("GET", "/api/v1/bootstrap", key, params={"limit": "3"})
    assert status == 200
    status, body = await api.commit(key, "x", namespace=None)
    assert status == 400 and body["error"]["details"]["field"] == "namespace"


async def test_stats_show_an_agent_only_what_it_may_read(api):
    alice = await api.register("alice")
    bob = await api.register("bob")
    await api.commit(bob, "bob's scratch", namespace="bob-ephemeral")
    await api.commit(bob, "bob's main")
    await api.commit(alice, "alice's scratch", namespace="alice-ephemeral")
    _, c = await api.commit(alice, "for everyone", namespace="shared")
    status, mine = await api.call("GET", "/api/v1/stats", alice, params={"after": c["position"]})
    assert status == 200
    assert mine["memories"]["by_namespace"] == {"alice-ephemeral": 1, "bob-main": 1, "shared": 1}
    assert mine["memories"]["total"] == 3
    assert "queues" not in mine                      # they span every namespace
    status, everything = await api.call("GET", "/api/v1/stats", ADMIN_KEY)
    assert everything["memories"]["by_namespace"] == {"alice-ephemeral": 1, "bob-ephemeral": 1, "bob-main": 1,
                                                      "shared": 1}
    assert everything["queues"]["distill_queue"] == 0 and everything["queues"]["conflicts_open"] == 0
    assert everything["queues"]["reactions_dead_letters"] == 0 and "processing" in everything["queues"]["episodes"]


async def test_internal_agent_ids_are_reserved(api):
    for agent_id in ("admin", "reaction", "scheduler", "system", "replica", "zhiyi", "zhiyi-sync"):
        status, body = await api.call("POST", "/api/v1/agents/register", json={"agent_id": agent_id})
        assert status == 400, (agent_id, body)
        assert_error(body, "reserved_agent_id")
        assert body["error"]["details"]["field"] == "agent_id"
    await api.register("reactions-bot")   # a longer id that merely starts like one is an ordinary agent


async def test_health_503_is_the_error_shape_with_the_health_document(aiohttp_client, tmp_path, use_embedder):
    """A Redis of its own that the test stops: /health answers 503 `unavailable`, the document in details."""

    from gateway.http.app import create_app
    from tests.e2e.conftest import make_settings
    from tests.redis_process import RestartableRedis

    server = RestartableRedis(tmp_path / "redis").start()
    try:
        app = create_app(make_settings(server.url, tmp_path, run_projectors=False,
                                       run_reactions=False, run_scheduler=False), embedder=use_embedder)
        http = await aiohttp_client(app)
        resp = await http.get("/health")
        assert resp.status == 200
        server.stop()
        resp = await http.get("/health")
        body = await resp.json()
        assert resp.status == 503
        assert_error(body, "unavailable")
        assert body["error"]["details"]["redis"] is False and body["error"]["details"]["status"] == "degraded"
    finally:
        server.stop()
