"""A primary (`zhiyi up --redis-bind`) and a LAN replica (`zhiyi replica`) as real processes, each with
its own Redis (the replica's `replicaof` the primary's), every connection from the replica side through
a TCP proxy the test cuts: read-your-writes on the replica with `after=`, writes forwarded exactly once,
digests equal after catch-up; a partition (reads 200, feedback 202 buffered, other writes 503
`primary_unreachable`), healed: digests converge within 10 s, each buffered vote applied once, the same
winning votes on both sides."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest
import redis as sync_redis

from eventually import eventually_sync
from tcp_proxy import TcpProxy
from up_process import base_env, free_port, output, request, start, stop, zhiyi_bin

REPLICA_ID = "rep-e2e"


class Lan:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.a, self.b = root / "primary", root / "replica"
        self.port_a, self.port_b = free_port(), free_port()
        self.procs: list[subprocess.Popen] = []
        self.proxies: list[TcpProxy] = []

    def start(self) -> "Lan":
        env = base_env(ZHIYI_QUERY_EMBEDDING_PROCESS="0", ZHIYI_TICK_INTERVAL_S="0")
        self.redis_port = free_port()
        self.primary = start([str(zhiyi_bin()), "up", "--data-dir", str(self.a), "--port", str(self.port_a),
                              "--redis-bind", "127.0.0.1", "--redis-port", str(self.redis_port)],
                             self.port_a, self.root, env)
        self.procs.append(self.primary)
        self.admin = (self.a / "api_key").read_text().strip()
        primary_redis = (self.a / "redis_url").read_text().strip()
        sync_redis.Redis.from_url(primary_redis).config_set("repl-diskless-sync-delay", 0)   # a quick first sync
        assert primary_redis.endswith(f"@127.0.0.1:{self.redis_port}/0"), "--redis-port, with a password"
        self.redis_proxy = TcpProxy("127.0.0.1", self.redis_port).start()
        self.http_proxy = TcpProxy("127.0.0.1", self.port_a).start()
        self.proxies += [self.redis_proxy, self.http_proxy]
        status, issued = request(self.port_a, "POST", "/api/v1/admin/replicas", self.admin,
                                 {"instance_id": REPLICA_ID})
        assert status == 201, issued
        password = (self.a / "redis_replica_password").read_text().strip()
        self.replica = start(
            [str(zhiyi_bin()), "replica", "--primary", f"http://{self.http_proxy.url_host_port}",
             "--primary-redis", f"redis://zhiyi-replica:{password}@{self.redis_proxy.url_host_port}",
             "--data-dir", str(self.b), "--port", str(self.port_b)], self.port_b, self.root,
            base_env(ZHIYI_QUERY_EMBEDDING_PROCESS="0", ZHIYI_REPLICA_KEY=issued["replica_key"],
                     ZHIYI_INSTANCE_ID=REPLICA_ID, API_KEY=self.admin,
                     ZHIYI_ADVERTISE_URL=f"http://replica-b.lan:{self.port_b}"))
        self.procs.append(self.replica)
        return self

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                stop(proc)
        for proxy in self.proxies:
            proxy.stop()

    def health(self, port: int) -> dict:
        status, body = request(port, "GET", "/health")
        return body if status == 200 else body.get("error", {}).get("details", body)

    def digests(self, data_dir: Path) -> dict[str, Any]:
        out = subprocess.run([str(zhiyi_bin()), "digest", "--json", "--data-dir", str(data_dir)], capture_output=True,
                             text=True, timeout=120, env=base_env(), cwd=self.root)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    def caught_up(self) -> bool:
        """Both sides' projections at the primary's last position."""
        a, b = self.health(self.port_a), self.health(self.port_b)
        last = a.get("log", {}).get("last_position")
        return bool(last) and b.get("log", {}).get("last_position") == last and all(
            p["position"] == last for side in (a, b) for p in side.get("projectors", {}).values())


@pytest.fixture(scope="module")
def lan(tmp_path_factory) -> Iterator[Lan]:
    lan = Lan(tmp_path_factory.mktemp("lan")).start()
    try:
        yield lan
    except BaseException:
        print("primary:", output(lan.primary)[-3000:], "\nreplica:", output(lan.replica)[-3000:])
        raise
    finally:
        lan.stop()


def _register(lan: Lan, agent: str) -> str:
    status, body = request(lan.port_b, "POST", "/api/v1/agents/register", lan.admin, {"agent_id": agent})
    assert status == 201, body          # forwarded by the replica
    return body["api_key"]


def _equal_digests(lan: Lan) -> bool:
    if not lan.caught_up():
        return False
    return lan.digests(lan.a)["projections"] == lan.digests(lan.b)["projections"]


def test_the_primarys_redis_takes_a_password_and_its_replica_user_only_replicates(lan: Lan) -> None:
    port = int((lan.a / "redis_url").read_text().strip().rsplit(":", 1)[1].split("/")[0])
    with pytest.raises(sync_redis.AuthenticationError):
        sync_redis.Redis(port=port).get("zhiyi:epoch")
    password = (lan.a / "redis_replica_password").read_text().strip()
    with pytest.raises(sync_redis.exceptions.NoPermissionError):
        sync_redis.Redis(port=port, username="zhiyi-replica", password=password).get("zhiyi:epoch")
    assert "LAN replicas replicate from redis://zhiyi-replica:PASSWORD@127.0.0.1" in output(lan.primary)
    assert password not in output(lan.primary)


def test_read_your_writes_and_a_forwarded_write_lands_once(lan: Lan) -> None:
    key = _register(lan, "ann")
    status, c = request(lan.port_a, "POST", "/api/v1/commit", key, {"content": "The build farm is in rack 12"})
    assert status == 201
    # the replica answers only once its own projections reached the commit
    status, found = request(lan.port_b, "GET", f"/api/v1/memory/{c['memory_id']}/versions?after={c['position']}", key)
    assert status == 200 and found["content"] == "The build farm is in rack 12", found
    reached = lan.health(lan.port_b)["projectors"]["memories"]["position"]
    assert tuple(map(int, reached.split("-"))) >= tuple(map(int, c["position"].split("-")))
    # a write through the replica, retried with the same key: one memory on the primary
    body = {"content": "The coffee machine is on floor 3"}
    first = request(lan.port_b, "POST", "/api/v1/commit", key, body, headers={"Idempotency-Key": "coffee-1"})
    again = request(lan.port_b, "POST", "/api/v1/commit", key, body, headers={"Idempotency-Key": "coffee-1"})
    assert first[0] == 201 and again[0] == 200, (first, again)       # what the primary answers a retry
    assert again[1]["memory_id"] == first[1]["memory_id"] and again[1]["duplicate"] is True
    status, recall = request(lan.port_b, "POST", "/api/v1/recall", key,
                             {"query": "coffee machine floor", "after": first[1]["position"], "cache": False})
    assert status == 200 and [r["memory_id"] for r in recall["results"]].count(first[1]["memory_id"]) == 1
    status, stats = request(lan.port_a, "GET", f"/api/v1/stats?after={first[1]['position']}", key)   # its own write
    assert stats["memories"]["by_namespace"]["ann-main"] == 2
    # the replica's recall audit reached the primary under the replica's origin; digests agree
    eventually_sync(lambda: _equal_digests(lan), timeout_s=30, interval_s=0.5, what="equal digests")
    # a key rotated (through the replica, forwarded) is refused on the replica once the rotation replicated
    status, rotated = request(lan.port_b, "POST", "/api/v1/agents/ann/rotate-key", key)
    assert status == 200, rotated
    eventually_sync(lambda: request(lan.port_b, "GET", "/api/v1/stats", key)[0] == 401, timeout_s=5,
                    interval_s=0.05, what="the old key refused on the replica")
    assert request(lan.port_b, "GET", "/api/v1/stats", rotated["api_key"])[0] == 200
    # the replica runs no reactions: the primary's reactions group has the primary's consumer only
    groups = sync_redis.Redis.from_url((lan.a / "redis_url").read_text().strip()).xinfo_consumers(
        "zhiyi:events", "reactions")
    assert [c["name"].decode() for c in groups] == [(lan.a / "instance_id").read_text().strip()]
    status, listed = request(lan.port_a, "GET", "/api/v1/instances", lan.admin)
    replica = [i for i in listed["instances"] if i["role"] == "replica"]
    assert [(r["instance_id"], r["status"]) for r in replica] == [(REPLICA_ID, "up")]
    assert replica[0]["url"] == f"http://replica-b.lan:{lan.port_b}"        # ZHIYI_ADVERTISE_URL
    gateway = next(i for i in listed["instances"] if i["role"] == "gateway")
    assert gateway["url"] == f"http://127.0.0.1:{lan.port_a}"                  # default: host and port


def test_a_partition_keeps_reads_buffers_votes_and_converges_after_the_heal(lan: Lan) -> None:
    key, other = _register(lan, "pat"), _register(lan, "quinn")
    status, c = request(lan.port_a, "POST", "/api/v1/commit", key, {"content": "The release train leaves on Tuesdays"})
    memory_id = c["memory_id"]
    assert request(lan.port_b, "GET", f"/api/v1/memory/{memory_id}/versions?after={c['position']}", key)[0] == 200
    lan.redis_proxy.cut()
    lan.http_proxy.cut()
    eventually_sync(lambda: lan.health(lan.port_b).get("link") == "down", timeout_s=15, interval_s=0.2,
                    what="the replica's link down")
    health = lan.health(lan.port_b)
    assert health["status"] == "degraded" and health["role"] == "replica"
    # reads go on; votes are buffered; other writes are refused with Retry-After
    status, view = request(lan.port_b, "GET", f"/api/v1/memory/{memory_id}/versions", key)
    assert status == 200 and view["content"] == "The release train leaves on Tuesdays"
    status, body = request(lan.port_b, "POST", "/api/v1/recall", key, {"query": "release train", "cache": False})
    assert status == 200 and body["results"]
    buffered = [request(lan.port_b, "POST", "/api/v1/feedback/not-useful", key, {"memory_id": memory_id},
                        headers={"Idempotency-Key": "pat-vote"}) for _ in range(2)]   # a retry is not a 2nd vote
    assert [b[0] for b in buffered] == [202, 202] and buffered[0][1] == {
        "memory_id": memory_id, "verdict": "not_useful", "buffered": True}
    assert request(lan.port_b, "POST", "/api/v1/feedback/useful", other, {"memory_id": memory_id})[0] == 202
    status, refused = request(lan.port_b, "POST", "/api/v1/commit", key, {"content": "written during the cut"})
    assert status == 503 and refused["error"]["code"] == "primary_unreachable", refused
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{lan.port_b}/api/v1/episodes", method="POST",
                                                      data=b"{}", headers={"X-API-Key": key}), timeout=30)
    assert raised.value.code == 503 and raised.value.headers["Retry-After"] == "5"
    assert lan.health(lan.port_b)["buffered"] == 2
    # meanwhile on the primary: pat changes its mind later (that vote must win), and a new memory
    time.sleep(0.05)
    assert request(lan.port_a, "POST", "/api/v1/feedback/useful", key, {"memory_id": memory_id})[0] == 201
    status, d = request(lan.port_a, "POST", "/api/v1/commit", key, {"content": "Written on the primary while cut off"})
    assert status == 201
    # a read that cannot reach a position (written on the primary during the cut) in time: 504, never proxied
    status, lagging = request(lan.port_b, "GET", f"/api/v1/memory/{d['memory_id']}/versions?after={d['position']}",
                              key)
    assert status == 504 and lagging["error"]["code"] == "projection_lag", lagging
    lan.redis_proxy.heal()
    lan.http_proxy.heal()
    healed = time.monotonic()
    eventually_sync(lambda: lan.health(lan.port_b)["buffered"] == 0 and lan.caught_up(), timeout_s=30,
                    interval_s=0.1, what="both sides at the same position after the heal")
    assert time.monotonic() - healed < 10, time.monotonic() - healed
    eventually_sync(lambda: _equal_digests(lan), timeout_s=30, interval_s=0.5, what="digests equal after the heal")
    last = lan.health(lan.port_a)["log"]["last_position"]
    views = [request(port, "GET", f"/api/v1/memory/{memory_id}/versions?after={last}", key)[1]
             for port in (lan.port_a, lan.port_b)]
    assert [(v["useful_count"], v["not_useful_count"]) for v in views] == [(2, 0), (2, 0)], views
    status, found = request(lan.port_b, "GET", f"/api/v1/memory/{d['memory_id']}/versions", key)
    assert status == 200
    from_replica = subprocess.run([str(zhiyi_bin()), "events", "ls", "--type", "memory.feedback", "--json",
                                   "--data-dir", str(lan.a)], capture_output=True, text=True, timeout=60,
                                  env=base_env(), cwd=lan.root)
    assert from_replica.returncode == 0, from_replica.stderr
    origins = [json.loads(line)["origin"] for line in from_replica.stdout.splitlines() if line.strip()]
    assert origins.count(REPLICA_ID) == 2    # each buffered vote once
