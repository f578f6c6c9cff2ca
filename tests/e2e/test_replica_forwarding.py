"""A replica's app in process (its log: the test Redis the primary app writes; its own state: another
database of it) in front of three primaries: the real app (writes forwarded once, read-your-writes on
the replica), a port nothing listens on (503 `primary_unreachable` with Retry-After; votes checked,
then buffered durably: 202), and a server that takes the request and never answers (503
`outcome_unknown`)."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import AsyncIterator

import pytest
import redis as sync_redis

from commands.rate_limits import RateLimits
from gateway.http.appkeys import SETTINGS

from events.clock import ManualClock
from gateway.http.app import create_app
from gateway.http.appkeys import REPLICA
from tests.e2e.conftest import Api, assert_error, make_settings
from tests.e2e.test_feedback import _commit
from up_process import free_port


@pytest.fixture
async def replica_of(aiohttp_client, redis_url, tmp_path, use_embedder):
    """Start a replica app forwarding to `primary_url`."""
    async def start(primary_url: str, **overrides) -> Api:
        settings = dataclasses.replace(
            make_settings(redis_url, tmp_path), data_dir=tmp_path / "replica", instance_id="rep-t",
            primary_url=primary_url, replica_key="zrk_test", state_redis_url=redis_url.rsplit("/", 1)[0] + "/1",
            run_reactions=False, run_scheduler=False,
            **{"replica_auth_grace_s": float("inf"), **overrides})   # its Redis replicates nothing: never "linked"
        app = create_app(settings, embedder=use_embedder, clock=ManualClock(int(time.time() * 1000)))
        return Api(await aiohttp_client(app))
    return start


@pytest.fixture
async def mute_primary() -> AsyncIterator[str]:
    """A server that reads the request and closes the connection without an answer."""
    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(65536)
        writer.close()

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    server.close()
    await server.wait_closed()


def _url(api: Api) -> str:
    return str(api.client.make_url("")).rstrip("/")


async def test_writes_are_forwarded_once_and_read_back_on_the_replica(api, replica_of):
    replica = await replica_of(_url(api))
    status, body = await replica.call("POST", "/api/v1/agents/register", json={"agent_id": "alice"})
    assert status == 201, body
    key = body["api_key"]
    sent = {"content": "The lab printer is lp-4"}
    first = await replica.call("POST", "/api/v1/commit", key, json=sent, headers={"Idempotency-Key": "p-1"})
    again = await replica.call("POST", "/api/v1/commit", key, json=sent, headers={"Idempotency-Key": "p-1"})
    assert first[0] == 201 and again[0] == 200 and again[1]["memory_id"] == first[1]["memory_id"]
    status, view = await replica.call("GET", f"/api/v1/memory/{first[1]['memory_id']}/versions", key,
                                      params={"after": first[1]["position"]})
    assert status == 200 and view["content"] == "The lab printer is lp-4"
    assert await api.count_events("memory.committed") == 1
    status, bad = await replica.call("POST", "/api/v1/commit", key, json={"content": 5})   # the primary's answer
    assert status == 400
    assert_error(bad, "invalid_request")


async def test_an_unreachable_primary_refuses_writes_and_buffers_checked_votes(api, replica_of):
    key = await api.register("alice")
    memory_id, position = await _commit(api, key, "The wiki lives at wiki.corp")
    replica = await replica_of(f"http://127.0.0.1:{free_port()}")
    resp = await replica.client.post("/api/v1/commit", json={"content": "x"}, headers={"X-API-Key": key})
    assert resp.status == 503 and resp.headers["Retry-After"] == "5"
    assert_error(await resp.json(), "primary_unreachable")
    # the vote is checked here before it is buffered
    status, _ = await replica.call("GET", f"/api/v1/memory/{memory_id}/versions", key, params={"after": position})
    assert status == 200
    checks = [({"memory_id": "no-such-memory"}, key, 404, "not_found"), ({}, key, 400, "invalid_request"),
              ({"memory_id": memory_id, "colour": 1}, key, 400, "unknown_field"),
              ({"memory_id": memory_id}, "zk_nobody", 401, "unauthorized")]
    for body, who, code, error in checks:
        status, answer = await replica.call("POST", "/api/v1/feedback/useful", who, json=body)
        assert status == code, (body, answer)
        assert_error(answer, error)
    for _ in range(2):   # a retry with the same key is the same vote
        status, answer = await replica.call("POST", "/api/v1/feedback/useful", key, json={"memory_id": memory_id},
                                            headers={"Idempotency-Key": "v-1"})
        assert status == 202 and answer == {"memory_id": memory_id, "verdict": "useful", "buffered": True}
    status, answer = await replica.call("POST", "/api/v1/feedback/not-useful", key, json={"memory_id": memory_id},
                                        headers={"Idempotency-Key": "v-1"})
    assert status == 422
    assert_error(answer, "idempotency_key_reused")
    outbox = replica.client.app[REPLICA].outbox
    pending = outbox.pending()
    assert len(pending) == 1 and pending[0]["agent_id"] == "alice" and pending[0]["verdict"] == "useful"
    status, health = await replica.call("GET", "/health", None)
    assert status == 200 and health["status"] == "degraded" and health["role"] == "replica"
    assert health["primary_http"] == "down" and health["buffered"] == 1
    assert await api.count_events("memory.feedback") == 0          # nothing reached the log


async def test_a_write_sent_but_never_answered_is_outcome_unknown(api, replica_of, mute_primary):
    key = await api.register("alice")
    memory_id, _ = await _commit(api, key, "The staging bucket is s3://stage-7")
    replica = await replica_of(mute_primary)
    for path, body in (("/api/v1/commit", {"content": "y"}), ("/api/v1/feedback/useful", {"memory_id": memory_id})):
        status, answer = await replica.call("POST", path, key, json=body, headers={"Idempotency-Key": "k"})
        assert status == 503, (path, answer)
        assert_error(answer, "outcome_unknown")
        assert answer["error"]["details"] == {"retry": "with the same Idempotency-Key"}
    assert replica.client.app[REPLICA].outbox.pending() == []       # maybe applied: never buffered


async def test_a_replica_limits_reads_itself_and_leaves_writes_to_the_primary(api, replica_of):
    key = await api.register("alice")
    limits = RateLimits.parse('{"default": {"read": [2, 3], "write": [1, 1]}}')
    replica = await replica_of(_url(api), rate_limits=limits)            # the primary (api) has no limits
    codes = [(await replica.call("GET", "/api/v1/stats", key))[0] for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    codes = [(await replica.call("POST", "/api/v1/commit", key, json={"content": f"n{i}"}))[0] for i in range(3)]
    assert codes == [201, 201, 201]                                      # forwarded: the primary's quota
    state = sync_redis.Redis.from_url(api.client.app[SETTINGS].redis_url.rsplit("/", 1)[0] + "/1")  # its own
    assert state.exists("zhiyi:rate:alice:read") and not state.exists("zhiyi:rate:alice:write")


async def test_a_replica_cut_off_past_the_grace_refuses_agent_keys(api, replica_of):
    key = await api.register("alice")
    replica = await replica_of(_url(api), replica_auth_grace_s=0)        # its link is down (no replication)
    status, body = await replica.call("GET", "/api/v1/stats", key)
    assert status == 503, body
    assert_error(body, "unavailable")
    assert "cut off from its primary" in body["error"]["message"]
    assert (await replica.call("GET", "/api/v1/stats"))[0] == 200      # the admin key is not an agent's
