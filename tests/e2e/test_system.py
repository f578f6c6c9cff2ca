"""Health, stats and the OpenAPI document."""

from __future__ import annotations

from tests.e2e.conftest import assert_error


async def test_health_needs_no_key_and_reports_projectors(api):
    key = await api.register("alice")
    _, c = await api.commit(key, "health check memory")
    await api.recall(key, "health", after=c["position"])
    status, body = await api.call("GET", "/health", None)
    assert status == 200 and body["status"] == "ok" and body["redis"] is True
    assert body["log"]["last_position"]
    assert "memories" in body["projectors"] and body["projectors"]["memories"]["position"]
    assert body["role"] == "primary" and body["instance_id"] == "e2e" and body["primary"] is None
    await api.settle()
    status, body = await api.call("GET", "/health", None)
    assert body["lag_ms"] == 0 and body["lag_events"] == 0


async def test_stats_counts_memories_and_events(api):
    alice = await api.register("alice")
    await api.commit(alice, "one", namespace="shared")
    _, c = await api.commit(alice, "two")
    await api.recall(alice, "one", after=c["position"])
    status, body = await api.call("GET", "/api/v1/stats")
    assert status == 200
    assert body["memories"]["by_namespace"] == {"alice-main": 1, "shared": 1}
    assert body["memories"]["total"] == 2
    assert body["events"]["total"] >= 3
    assert body["projectors"]["memories"]["position"]


async def test_openapi_documents_every_route(api):
    status, doc = await api.call("GET", "/api/v1/openapi.json", None)
    assert status == 200 and doc["openapi"].startswith("3.")
    documented = {(path, method.upper()) for path, ops in doc["paths"].items() for method in ops}
    routes = set()
    for route in api.client.app.router.routes():
        info = route.resource.get_info() if route.resource else {}
        path = info.get("path") or info.get("formatter")
        if route.method in ("HEAD", "OPTIONS") or path is None:
            continue
        routes.add((path, route.method))
    assert routes <= documented, routes - documented
    assert doc["components"]["schemas"]["Error"]["properties"]["error"]["required"] == ["code", "message", "details"]


async def test_stats_requires_a_key(api):
    status, body = await api.call("GET", "/api/v1/stats", None)
    assert status == 401
    assert_error(body, "unauthorized")


async def test_instances_list_the_running_gateway(api):
    from gateway.process.instance_beat import zhiyi_version

    key = await api.register("alice")
    await api.settle()
    status, body = await api.call("GET", "/api/v1/instances")
    assert status == 200, body
    mine = [i for i in body["instances"] if i["instance_id"] == "e2e"]
    assert [(i["role"], i["status"]) for i in mine] == [("gateway", "up")], body
    assert mine[0]["version"] == zhiyi_version() and mine[0]["last_seen"].endswith("Z")
    status, body = await api.call("GET", "/api/v1/instances", key)
    assert status == 403 and body["error"]["code"] == "admin_required"
