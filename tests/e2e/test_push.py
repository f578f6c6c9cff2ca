"""The push socket (seed 2.7) through the real app: every push type from a real trigger, to the agents
it concerns and to no one else; resume with `after=`; a second gateway; auth and bad requests."""

from __future__ import annotations

import asyncio
import json
import struct
import time

import aiohttp
import pytest

from events import positions
from events.clock import ManualClock
from gateway.http.app import create_app
from gateway.http.appkeys import PUSH, STORE
from tests.e2e.conftest import ADMIN_KEY, Api, assert_error, make_settings
from tests.eventually import eventually
from tests.e2e.push_client import StalledSocket, listen
from tests.e2e.test_conflicts import PORT_A, PORT_B
from tests.e2e.test_feedback import _commit, _feedback, _voters


BROADCAST = ("worldmodel.updated", "deep.consolidation.done")     # every agent hears these


def _addressed(messages: list[dict]) -> list[dict]:
    """The messages addressed to this agent (what every agent hears left out)."""
    return [m for m in messages if m["type"] not in BROADCAST]


async def _correct(api: Api, key: str, memory_id: str, content: str, reason: str = "moved") -> str:
    status, body = await api.call("POST", "/api/v1/feedback/correct", key,
                                  json={"memory_id": memory_id, "content": content, "reason": reason})
    assert status == 200, body
    return body["position"]


async def test_registration_names_the_socket_and_only_its_agent_may_open_it(api):
    status, reg = await api.call("POST", "/api/v1/agents/register", json={"agent_id": "alice"})
    assert status == 201 and reg["ws_endpoint"] == "/api/v1/ws/alice"
    alice, bob = reg["api_key"], await api.register("bob")
    assert not api.client.app[PUSH].tailing              # no socket yet: the hub reads nothing
    listener = await listen(api.client, "alice", alice)
    assert api.client.app[PUSH].tailing
    assert listener.connected["data"]["resumed"] is False
    await listener.close()
    listener = await listen(api.client, "alice", alice, in_query=True)      # ?api_key= (browsers)
    await listener.close()
    listener = await listen(api.client, "alice", ADMIN_KEY)                 # the admin key may listen for anyone
    await listener.close()
    for key, path, status_code, code in ((bob, "/api/v1/ws/alice", 403, "forbidden"),
                                         (None, "/api/v1/ws/alice", 401, "unauthorized"),
                                         ("nope", "/api/v1/ws/alice", 401, "unauthorized"),
                                         (ADMIN_KEY, "/api/v1/ws/nobody", 404, "unknown_agent"),
                                         (ADMIN_KEY, "/api/v1/ws/bad%20id", 400, "invalid_request")):
        try:
            await api.client.ws_connect(path, headers=api.headers(key))
            raise AssertionError(f"{path} with {key} was accepted")
        except aiohttp.WSServerHandshakeError as exc:
            assert exc.status == status_code, (path, key, exc)
        status, body = await api.call("GET", path, key)     # the same refusal as JSON, without the upgrade
        assert status == status_code, body
        assert_error(body, code)
    status, body = await api.call("GET", "/api/v1/ws/alice", alice)          # no upgrade: a clear 400
    assert status == 400 and "WebSocket" in body["error"]["message"]
    status, body = await api.call("GET", "/api/v1/ws/alice", alice, params={"after": "yesterday"})
    assert status == 400
    assert_error(body, "invalid_request")
    status, body = await api.call("GET", "/api/v1/ws/alice", alice, params={"afer": "1-0"})
    assert status == 400
    assert_error(body, "unknown_field")


async def test_a_correction_reaches_the_owner_and_the_dependants_owners_only(api):
    alice, bob, carol = await api.register("alice"), await api.register("bob"), await api.register("carol")
    cfg, _ = await _commit(api, alice, "nginx serves the API on port 8080")
    dep, _ = await _commit(api, bob, "the health check probes http://localhost:8080/health", depends_on=[cfg])
    await api.settle()
    ears = {name: await listen(api.client, name, key) for name, key in (("alice", alice), ("bob", bob),
                                                                        ("carol", carol))}
    position = await _correct(api, alice, cfg, "nginx serves the API on port 8443", "moved to TLS")
    got = await ears["alice"].next()
    assert got == {"type": "memory.updated", "position": position,
                   "data": {"memory_id": cfg, "new_version": 2, "reason": "moved to TLS", "change": "corrected",
                            "namespace": "alice-main"}}
    to_bob = [await ears["bob"].next(), await ears["bob"].next()]     # the correction, then his memory went stale
    assert to_bob[0] == got
    stale = to_bob[1]
    assert stale["type"] == "memory.updated" and stale["data"]["memory_id"] == dep
    assert stale["data"]["change"] == "stale" and stale["data"]["caused_by"] == cfg
    assert stale["data"]["new_version"] == 2 and "moved to TLS" in stale["data"]["reason"]
    await api.settle()
    assert _addressed(await ears["carol"].quiet(0.5)) == []            # not hers: she hears nothing
    assert _addressed(await ears["alice"].quiet(0.2)) == []            # bob's memory went stale, not alice's
    for listener in ears.values():
        await listener.close()


async def test_an_agent_never_hears_of_another_agents_ephemeral_memories(api):
    alice, bob = await api.register("alice"), await api.register("bob")
    secret, _ = await _commit(api, alice, "the staging root password is hunter2", namespace="alice-ephemeral")
    ear = await listen(api.client, "bob", bob)
    await _correct(api, alice, secret, "the staging root password is hunter3")
    voters = await _voters(api, 5)
    for key in voters:
        status, body = await api.call("POST", "/api/v1/feedback/not-useful", key, json={"memory_id": secret})
        assert status == 404, body                   # invisible to them, as to bob
    await api.settle()
    assert _addressed(await ear.quiet(0.5)) == []
    await ear.close()


async def test_conflicts_reach_the_owners_of_both_memories(api):
    alice, bob, carol = await api.register("alice"), await api.register("bob"), await api.register("carol")
    ears = {n: await listen(api.client, n, k) for n, k in (("alice", alice), ("bob", bob), ("carol", carol))}
    first, _ = await _commit(api, alice, PORT_A, namespace="shared", source="user_verbal")
    await api.settle()     # the second commit is compared with what is projected
    status, second = await api.commit(bob, PORT_B, namespace="shared", source="config_parse")
    assert status == 201 and second["conflicts"], second
    conflict_id = second["conflicts"][0]["conflict_id"]
    for name in ("alice", "bob"):
        got = await ears[name].next("conflict.detected")
        assert got["data"]["conflict_id"] == conflict_id and got["data"]["kind"] == "entity"
        assert [(e["memory_id"], e["content"]) for e in got["data"]["entries"]] == \
            [(second["memory_id"], PORT_B), (first, PORT_A)]
    status, done = await api.call("POST", "/api/v1/conflicts/resolve", bob,
                                  json={"conflict_id": conflict_id, "strategy": "latest_wins"})
    assert status == 200, done
    for name in ("alice", "bob"):
        got = await ears[name].next("conflict.resolved")
        assert positions.key(got["position"]) <= positions.key(done["position"])   # the same append
        assert got["data"]["resolution"] == {"strategy": "latest_wins", "winner": second["memory_id"],
                                             "loser": first, "rule": ""}
    await api.settle()
    assert _addressed(await ears["carol"].quiet(0.3)) == []    # (bob's config_parse commit updates the world model)
    for listener in ears.values():
        await listener.close()


async def test_a_quality_drop_reaches_the_owner(api):
    alice = await api.register("alice")
    mid, _ = await _commit(api, alice, "the VPN password rotates every Monday")
    ear = await listen(api.client, "alice", alice)
    for key in await _voters(api, 5):
        await _feedback(api, key, mid, "not-useful")
    await _feedback(api, alice, mid, "useful")
    got = await ear.next("quality.drop")
    # raised by the vote that made it low: the fifth not-useful one, or with alice's useful one too
    assert got["data"]["memory_id"] == mid and got["data"]["score"] < 0.3 and got["data"]["feedback"] in (5, 6)
    assert "correct" in got["data"]["suggestion"]
    await ear.close()


async def test_prefetch_partners_are_pushed_after_the_recall(api):
    alice = await api.register("alice")
    a, _ = await _commit(api, alice, "the staging cluster uses Postgres 15")
    b, _ = await _commit(api, alice, "staging cluster backups go to the S3 bucket zhiyi-staging")
    await api.settle()
    for _ in range(3):
        await api.recall(alice, "staging cluster", cache=False, top_k=5)
    await api.settle()
    ear = await listen(api.client, "alice", alice)
    deadline = time.monotonic() + 5
    while True:       # the gateway follows the CO_OCCURS edges in memory, a moment behind the graph
        status, res = await api.recall(alice, "Postgres version on staging", cache=False, top_k=1,
                                       trace_id="t-1")
        if res["prefetch"] or time.monotonic() > deadline:
            break
    assert status == 200 and [p["memory_id"] for p in res["prefetch"]] == [b]
    status, body = await api.recall(alice, "Postgres", trace_id="no spaces allowed")
    assert status == 400 and body["error"]["details"]["field"] == "trace_id"
    got = await ear.next("prefetch.push")
    assert got["data"] == {"query": "Postgres version on staging", "trace_id": "t-1",
                           "memories": [{"id": b, "content": "staging cluster backups go to the S3 bucket "
                                                             "zhiyi-staging", "namespace": "alice-main",
                                         "score": 1.0}]}
    await ear.close()


async def test_a_consolidation_report_reaches_every_agent(api):
    alice, bob = await api.register("alice"), await api.register("bob")
    ears = [await listen(api.client, "alice", alice), await listen(api.client, "bob", bob)]
    await _commit(api, alice, "Redis listens on port 6379")
    status, run = await api.call("POST", "/api/v1/admin/consolidate", json={})
    assert status == 200, run
    for ear in ears:
        got = await ear.next("deep.consolidation.done")
        assert got["position"] == run["position"] and got["data"]["run_id"] == run["run_id"]
        assert got["data"]["report"]["memories"] == 1
        await ear.close()


async def test_a_reconnecting_client_gets_exactly_what_it_missed_in_order(api):
    alice = await api.register("alice")
    mid, _ = await _commit(api, alice, "the build server is build-01")
    ear = await listen(api.client, "alice", alice)
    first = await _correct(api, alice, mid, "the build server is build-02")
    assert (await ear.next())["position"] == first
    await ear.close()
    missed = [await _correct(api, alice, mid, f"the build server is build-0{i}") for i in (3, 4, 5)]
    await api.settle()
    ear = await listen(api.client, "alice", alice, after=first)
    assert ear.connected["position"] == first and ear.connected["data"]["resumed"] is True
    got = [await ear.next() for _ in missed]
    assert [m["position"] for m in got] == missed
    assert [m["data"]["new_version"] for m in got] == [3, 4, 5]
    live = await _correct(api, alice, mid, "the build server is build-06")    # then live, once
    assert (await ear.next())["position"] == live
    assert await ear.quiet(0.3) == []
    await ear.close()
    # resuming from the connected message's position of a fresh socket: nothing before it
    ear = await listen(api.client, "alice", alice, after=live)
    assert await ear.quiet(0.3) == []
    await ear.close()


async def test_another_gateway_pushes_what_this_one_appended(api, aiohttp_client, redis_url, tmp_path, use_embedder):
    alice = await api.register("alice")
    mid, _ = await _commit(api, alice, "the build server is build-01")
    other = create_app(make_settings(redis_url, tmp_path / "b", instance_id="e2e-b", run_projectors=False,
                                     run_reactions=False, run_scheduler=False),
                       embedder=use_embedder, clock=ManualClock(int(time.time() * 1000)))
    client_b = await aiohttp_client(other)
    ear = await listen(client_b, "alice", alice)
    position = await _correct(api, alice, mid, "the build server is build-02")
    got = await ear.next()
    assert got["type"] == "memory.updated" and got["position"] == position
    assert other[PUSH].connections("alice") == 1 and api.client.app[PUSH].connections("alice") == 0
    await ear.close()


BOUND = 512 * 1024
FILLER = " ".join(f"note{i}" for i in range(1800))      # ~14 KB: each prefetch push carries one such memory


@pytest.mark.parametrize("settings_overrides", [{"push_queue_messages": 1000, "push_queue_bytes": BOUND}])
async def test_a_stalled_client_gets_a_bounded_queue_then_resync_and_close_4000(api):
    alice = await api.register("alice")
    a, _ = await _commit(api, alice, "the staging cluster uses Postgres 15. " + FILLER)
    await _commit(api, alice, "staging cluster backups go to the S3 bucket zhiyi-staging. " + FILLER)
    await api.settle()
    for _ in range(3):
        await api.recall(alice, "staging cluster", cache=False, top_k=5)
    await api.settle()
    async def with_prefetch():     # the gateway follows the CO_OCCURS edges in memory, a moment behind
        _, res = await api.recall(alice, "Postgres version on staging", cache=False, top_k=1)
        return res["prefetch"] or None

    await eventually(with_prefetch, timeout_s=10, interval_s=0.1, what="a recall with prefetch partners")
    hub = api.client.app[PUSH]
    server = api.client.server
    stalled = await asyncio.to_thread(StalledSocket, server.host, server.port, "/api/v1/ws/alice", alice)
    # it reads nothing: its buffer fills, then the server's, then the socket's bounded queue
    recalls = 0
    while hub.overflows == 0:
        status, res = await api.recall(alice, "Postgres version on staging", cache=False, top_k=1)
        assert status == 200
        recalls += 1
        assert hub.queued_bytes() <= BOUND
        assert recalls < 600, f"the queue never overflowed ({hub.delivered} offered, {hub.queued_bytes()} queued)"
        if not res["prefetch"]:
            await asyncio.sleep(0.05)       # the gateway's CO_OCCURS follower is a moment behind
    frames = await asyncio.to_thread(lambda: list(stalled.frames()))   # now it reads, to the end
    stalled.close()
    got = [json.loads(payload) for op, payload in frames if op == 1]
    closes = [payload for op, payload in frames if op == 8]
    assert closes and struct.unpack(">H", closes[0][:2])[0] == 4000, frames[-1:]
    assert got[0]["type"] == "connected"
    resync = got[-1]
    assert resync["type"] == "resync" and resync["data"]["dropped"] > 0
    pushed = [m for m in got[1:-1] if m["type"] == "prefetch.push"]
    # resume from the last message it got (its misses' gap.detected pushes included)
    assert resync["position"] == (got[-2] if len(got) > 1 else got[0])["position"]
    print(f"stalled client: {recalls} recalls, {len(pushed)} pushes read before resync, "
          f"{resync['data']['dropped']} dropped")
    assert hub.connections("alice") == 0 and hub.queued_bytes() == 0
    # reconnecting from there delivers the rest: one push per recall served after it
    await api.settle()
    served = [e for e in await api.client.app[STORE].read(resync["position"])
              if e.type == "recall.served" and e.data.prefetch_ids]
    ear = await listen(api.client, "alice", alice, after=resync["position"])
    rest = [await ear.next("prefetch.push") for _ in served]
    missing = sorted(set(e.position for e in served) - set(m["position"] for m in rest))
    assert [m["position"] for m in rest] == [e.position for e in served], \
        [(e.position, e.data.prefetch_ids, e.data.namespaces) for e in served if e.position in missing]
    assert all(m["type"] == "prefetch.push" for m in rest)
    await ear.close()
