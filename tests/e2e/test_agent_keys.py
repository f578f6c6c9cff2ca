"""Key rotation and revocation through the real app: the old key is refused on the next request, on
this gateway and on another one sharing the Redis; a retried rotation answers the same new key; only
the admin key or the agent's own may do it; replay rebuilds the same key index."""

from __future__ import annotations

import time

from events.clock import ManualClock
from events.redis import keys
from gateway.http.app import create_app
from gateway.http.appkeys import STORE
from tests.e2e.conftest import ADMIN_KEY, Api, assert_error, make_settings


async def _second_gateway(aiohttp_client, redis_url, tmp_path, use_embedder) -> Api:
    app = create_app(make_settings(redis_url, tmp_path / "b", instance_id="e2e-b", run_projectors=False,
                                   run_reactions=False, run_scheduler=False),
                     embedder=use_embedder, clock=ManualClock(int(time.time() * 1000)))
    return Api(await aiohttp_client(app))


async def test_a_rotated_key_is_refused_at_once_everywhere(api, aiohttp_client, redis_url, tmp_path, use_embedder):
    old = await api.register("alice")
    other = await _second_gateway(aiohttp_client, redis_url, tmp_path, use_embedder)
    for gateway in (api, other):                     # both have seen (and remembered) the old key
        assert (await gateway.call("GET", "/api/v1/stats", old))[0] == 200
    status, body = await api.call("POST", "/api/v1/agents/alice/rotate-key", old, headers={"Idempotency-Key": "r1"})
    assert status == 200 and body["agent_id"] == "alice" and body["api_key"] != old
    new = body["api_key"]
    again = await api.call("POST", "/api/v1/agents/alice/rotate-key", new, headers={"Idempotency-Key": "r1"})
    assert again == (200, body)                          # a retry answers the same new key
    status, again = await api.call("POST", "/api/v1/agents/alice/rotate-key", headers={"Idempotency-Key": "r1"})
    assert status == 200 and again["api_key"] == new     # the admin's retry too
    for gateway in (api, other):
        status, error = await gateway.call("GET", "/api/v1/stats", old)
        assert status == 401, error
        assert_error(error, "unauthorized")
        assert (await gateway.call("GET", "/api/v1/stats", new))[0] == 200
    assert await api.count_events("agent.key_rotated") == 1


async def test_revoke_then_rotate_in(api):
    key = await api.register("bob")
    await api.register("carol")
    status, body = await api.call("POST", "/api/v1/agents/bob/revoke", api.keys["carol"])   # not its own
    assert status == 403
    assert_error(body, "forbidden")
    status, body = await api.call("POST", "/api/v1/agents/bob/revoke", key)
    assert status == 200 and body["revoked"] is True
    assert (await api.call("GET", "/api/v1/stats", key))[0] == 401
    status, body = await api.call("POST", "/api/v1/agents/bob/revoke")               # nothing left to revoke
    assert status == 409
    status, body = await api.commit(ADMIN_KEY, "on bob's behalf", agent_id="bob")   # the admin still acts for it
    assert status == 201
    status, body = await api.call("POST", "/api/v1/agents/bob/rotate-key")          # the admin gives a new key
    assert status == 200
    assert (await api.call("GET", "/api/v1/stats", body["api_key"]))[0] == 200
    for path, code in (("/api/v1/agents/nobody/rotate-key", 404), ("/api/v1/agents/bad%20id/revoke", 400)):
        status, body = await api.call("POST", path)
        assert status == code, body
    status, body = await api.call("POST", "/api/v1/agents/bob/rotate-key", json={"colour": 1})
    assert status == 400
    assert_error(body, "unknown_field")


async def test_the_key_index_rebuilt_from_the_log_is_the_same(api):
    key = await api.register("dora")
    status, body = await api.call("POST", "/api/v1/agents/dora/rotate-key", key)
    await api.call("POST", "/api/v1/agents/dora/revoke", body["api_key"])
    await api.call("POST", "/api/v1/agents/dora/rotate-key")
    store = api.client.app[STORE]
    before = (await store.redis.hgetall(keys.AGENT_KEYS), await store.redis.hgetall(keys.agent("dora")))
    await store.rebuild_indexes()
    assert (await store.redis.hgetall(keys.AGENT_KEYS), await store.redis.hgetall(keys.agent("dora"))) == before


async def test_a_key_is_looked_up_again_only_once_the_keys_changed(api, aiohttp_client, redis_url, tmp_path,
                                                                    use_embedder, monkeypatch):
    """The agent of a key is kept while the keys' version (read with the log's epoch, after the request
    arrived) is the one it was read at; any key write anywhere changes the version."""
    key = await api.register("erin")
    store = api.client.app[STORE]
    looked_up: list[str] = []
    real = store.agent_for_key_hash

    async def counted(key_hash: str) -> str | None:
        looked_up.append(key_hash)
        return await real(key_hash)

    monkeypatch.setattr(store, "agent_for_key_hash", counted)
    for _ in range(5):
        assert (await api.call("GET", "/api/v1/stats", key))[0] == 200
    assert len(looked_up) <= 1                        # kept from the first (or from the registration's request)
    other = await _second_gateway(aiohttp_client, redis_url, tmp_path, use_embedder)
    await other.register("frank")                      # a key written elsewhere: looked up again, still valid
    assert (await api.call("GET", "/api/v1/stats", key))[0] == 200
    assert len(looked_up) == 2
    assert (await api.call("GET", "/api/v1/stats", key))[0] == 200 and len(looked_up) == 2
    status, _ = await other.call("POST", "/api/v1/agents/erin/revoke", key)    # revoked on the other gateway
    assert status == 200
    status, error = await api.call("GET", "/api/v1/stats", key)                  # refused here at once
    assert status == 401 and len(looked_up) == 3
    assert_error(error, "unauthorized")
