"""A retried registration answers the same api_key (issue 11 point 2): its plaintext lives only in the
idempotency record (24 h TTL), never in an event or a projection."""

from __future__ import annotations

from events.redis import keys
from gateway.http.appkeys import STORE
from tests.e2e.conftest import assert_error


async def _register(api, body: dict, idem: str | None = None):
    headers = {"Idempotency-Key": idem} if idem else None
    return await api.call("POST", "/api/v1/agents/register", json=body, headers=headers)


async def test_a_retried_register_returns_the_same_key_stored_nowhere_else(api, tmp_path):
    status, first = await _register(api, {"agent_id": "hermes", "agent_type": "coder"}, idem="reg-1")
    assert status == 201, first
    status, again = await _register(api, {"agent_id": "hermes", "agent_type": "coder"}, idem="reg-1")
    assert status == 201 and again == first  # the same answer, key and position included
    status, other = await _register(api, {"agent_id": "hermes", "agent_type": "other"}, idem="reg-1")
    assert status == 422
    assert_error(other, "idempotency_key_reused")
    # without a key: the same body within the window is the same registration
    status, plain = await _register(api, {"agent_id": "athena"})
    assert status == 201
    status, plain_again = await _register(api, {"agent_id": "athena"})
    assert status == 201 and plain_again["api_key"] == plain["api_key"]
    status, body = await _register(api, {"agent_id": "athena", "namespace": "athena-notes"})
    assert status == 409
    assert_error(body, "agent_exists")
    # the keys work
    for key in (first["api_key"], plain["api_key"]):
        status, _ = await api.commit(key, "a memory written with a key delivered by a retry")
        assert status == 201
    await api.settle()
    store = api.client.app[STORE]
    registered = [f for _, f in await store.redis.xrange(keys.STREAM) if f[b"t"] == b"agent.registered"]
    assert len(registered) == 2
    secrets = [first["api_key"].encode(), plain["api_key"].encode()]
    # no event holds the plaintext
    for _, fields in await store.redis.xrange(keys.STREAM):
        blob = b"".join(fields.values())
        assert not any(s in blob for s in secrets)
    # no projection file holds it
    files = [p for p in (tmp_path / "data").rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        assert not any(s in data for s in secrets), path
    # only the idempotency records do, for at most 24 h
    holders = []
    async for k in store.redis.scan_iter(match="zhiyi:*", count=1000):
        if await store.redis.type(k) == b"hash":
            values = b"".join((await store.redis.hgetall(k)).values())
            if any(s in values for s in secrets):
                holders.append(k)
    assert sorted(holders) == sorted([b"zhiyi:idem:zhiyi-register:reg-1",
                                      *[k for k in holders if k.startswith(b"zhiyi:idem:zhiyi-register:request:")]])
    assert len(holders) == 2
    for k in holders:
        assert 0 < await store.redis.ttl(k) <= 24 * 3600
