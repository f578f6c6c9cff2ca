"""Per-agent rate limits through the real app (quotas on, small ones): 429 `rate_limited` with
Retry-After and X-RateLimit-* once a bucket is empty, none at the rate, the admin key alone never
limited, the admin acting for an agent charged to it, a batch one write, a replica's reads limited in
its own Redis; registration says the quotas."""

from __future__ import annotations

import asyncio
import time

import pytest

from commands.rate_limits import RateLimits
from events.clock import ManualClock
from gateway.http.app import create_app
from redis_process import RestartableRedis
from tests.e2e.conftest import Api, assert_error, make_settings

QUOTAS = '{"default": {"read": [4, 4], "write": [2, 2]}, "hermes": {"read": [20, 20], "write": [5, 5]}}'


@pytest.fixture
def settings_overrides() -> dict:
    return {"rate_limits": RateLimits.parse(QUOTAS)}


async def _status(api, key, path="/api/v1/stats", **kw) -> tuple[int, dict, object]:
    resp = await api.client.request("GET", path, headers=api.headers(key), **kw)
    return resp.status, await resp.json(), resp.headers


async def test_a_burst_then_429_with_its_headers(api):
    status, body = await api.call("POST", "/api/v1/agents/register", json={"agent_id": "alice"})
    assert status == 201 and body["rate_limits"] == {"read": {"rate": 4.0, "burst": 4},
                                                     "write": {"rate": 2.0, "burst": 2}}
    key = body["api_key"]
    answers = [await _status(api, key) for _ in range(5)]
    assert [a[0] for a in answers] == [200, 200, 200, 200, 429]
    assert [a[2]["X-RateLimit-Remaining"] for a in answers[:4]] == ["3", "2", "1", "0"]
    status, error, headers = answers[4]
    assert_error(error, "rate_limited")
    assert error["error"]["details"] == {"agent_id": "alice", "kind": "read", "rate": 4.0, "burst": 4}
    assert headers["Retry-After"] == "1" and headers["X-RateLimit-Limit"] == "4"
    assert int(headers["X-RateLimit-Reset"]) >= int(time.time())
    # writes have their own bucket: two commits pass, the third waits
    codes = [(await api.commit(key, f"note {i}"))[0] for i in range(3)]
    assert codes == [201, 201, 429]


async def test_no_429_at_the_rate_and_429s_above_it(api):
    key = await api.register("bob")
    refused = 0
    started = time.monotonic()
    for i in range(12):                    # 3.3/s against 4/s: never refused
        await asyncio.sleep(max(0.0, started + i * 0.3 - time.monotonic()))
        refused += (await _status(api, key))[0] == 429
    assert refused == 0
    await asyncio.sleep(1.1)               # the bucket fills again
    codes = [(await _status(api, key))[0] for _ in range(12)]   # back to back: about the burst passes
    assert codes.count(200) in (4, 5) and codes.count(429) >= 7


async def test_the_admin_alone_is_not_limited_and_acting_for_an_agent_charges_it(api):
    await api.register("carol")
    codes = [(await api.call("GET", "/api/v1/stats"))[0] for _ in range(10)]
    assert codes == [200] * 10
    statuses = [(await api.call("GET", "/api/v1/bootstrap", params={"agent_id": "carol"}))[0] for _ in range(5)]
    assert statuses == [200, 200, 200, 200, 429]
    # a batch of three is one write; the admin key in the body's agent_id is charged to carol
    entries = [{"content": f"fact {i}"} for i in range(3)]
    status, _ = await api.call("POST", "/api/v1/batch-commit", json={"entries": entries, "agent_id": "carol"})
    assert status == 201
    status, _ = await api.call("POST", "/api/v1/commit", json={"content": "one more", "agent_id": "carol"})
    assert status == 201
    status, body = await api.call("POST", "/api/v1/commit", json={"content": "too many", "agent_id": "carol"})
    assert status == 429 and body["error"]["details"]["kind"] == "write"


async def test_the_agent_type_picks_the_quota(api):
    status, body = await api.call("POST", "/api/v1/agents/register",
                                  json={"agent_id": "hermes-main", "agent_type": "hermes"})
    assert body["rate_limits"]["read"] == {"rate": 20.0, "burst": 20}
    codes = [(await _status(api, body["api_key"]))[0] for _ in range(10)]
    assert codes == [200] * 10


async def test_with_redis_away_reads_pass_unlimited(aiohttp_client, tmp_path, use_embedder):
    server = RestartableRedis(tmp_path / "redis").start()
    try:
        app = create_app(make_settings(server.url, tmp_path, rate_limits=RateLimits.parse(QUOTAS)),
                         embedder=use_embedder, clock=ManualClock(int(time.time() * 1000)))
        api = Api(await aiohttp_client(app))
        key = await api.register("dora")

        async def recall():
            resp = await api.client.post("/api/v1/recall", json={"query": "anything", "cache": False},
                                         headers=api.headers(key))
            return resp.status, await resp.json(), resp.headers

        status, body, headers = await recall()
        assert status == 200 and headers["X-RateLimit-Remaining"] == "3"
        server.stop()
        for _ in range(6):                          # more than the burst: the buckets cannot be read
            status, body, headers = await recall()
            assert status == 200, body              # recall is served from the projections
            assert "X-RateLimit-Remaining" not in headers
    finally:
        server.stop()
