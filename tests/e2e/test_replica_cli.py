"""`zhiyi replica` refuses to start when it must not serve: no replica key, a `--primary-redis` that is
not a Redis URL, a `--redis-url` that does not replicate the primary's Redis (checked with ROLE), a
primary that embeds with another model or refuses the key, a primary it never reached. Each run is the
real console script; the primary's HTTP side is a small local server speaking its wire format."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest
import redis as sync_redis

from redis_process import RestartableRedis
from up_process import base_env, free_port, zhiyi_bin


class StubPrimary:
    """GET /health → {embedding_model}; POST /api/v1/replicas/{id}/ops → `ops_status`."""

    def __init__(self, model: str = "use-multilingual-v3", ops_status: int = 200) -> None:
        self.model, self.ops_status = model, ops_status
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _json(self, status: int, body: dict) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                self._json(200, {"status": "ok", "role": "primary", "embedding_model": stub.model})

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if stub.ops_status != 200:
                    self._json(stub.ops_status, {"error": {"code": "unauthorized", "message": "invalid replica key",
                                                           "details": {}}})
                else:
                    self._json(200, {"results": [], "log": {"last_position": None, "epoch": None}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def redis_pair(tmp_path) -> Iterator[tuple[RestartableRedis, RestartableRedis]]:
    """Two redis-servers: `primary`, and `replica` replicaof it."""
    primary = RestartableRedis(tmp_path / "p").start()
    replica = RestartableRedis(tmp_path / "r").start()
    replica.client().replicaof("127.0.0.1", primary.port)
    deadline = time.monotonic() + 10
    while replica.client().info("replication").get("master_link_status") != "up":
        assert time.monotonic() < deadline, "the test replica did not sync"
        time.sleep(0.05)
    try:
        yield primary, replica
    finally:
        replica.stop()
        primary.stop()


def _replica(tmp_path: Path, primary_url: str, primary_redis: str, *extra: str, key: str | None = "zrk_test",
             timeout_s: float = 120) -> subprocess.CompletedProcess:
    env = base_env(ZHIYI_INSTANCE_ID="rep-cli", **({"ZHIYI_REPLICA_KEY": key} if key else {}))
    return subprocess.run([str(zhiyi_bin()), "replica", "--primary", primary_url, "--primary-redis", primary_redis,
                           "--data-dir", str(tmp_path / "replica"), "--port", str(free_port()), *extra],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=timeout_s)


def _refused(out: subprocess.CompletedProcess, words: str) -> None:
    assert out.returncode == 2, out.stdout + out.stderr
    assert words in out.stderr, out.stderr


def test_without_a_key_or_with_a_bad_primary_redis_url(tmp_path) -> None:
    _refused(_replica(tmp_path, "http://127.0.0.1:9", "redis://127.0.0.1:9", key=None), "set ZHIYI_REPLICA_KEY")
    _refused(_replica(tmp_path, "http://127.0.0.1:9", "http://127.0.0.1:9"), "--primary-redis must be redis://")


def test_a_redis_url_must_replicate_the_primary_redis(tmp_path, redis_pair) -> None:
    primary, replica = redis_pair
    stub = StubPrimary(model="http:bge-m3")
    try:
        # a standalone server, or a replica of another: refused by ROLE
        _refused(_replica(tmp_path, stub.url, primary.url, "--redis-url", primary.url), "is not a replica of")
        _refused(_replica(tmp_path, stub.url, f"redis://127.0.0.1:{free_port()}", "--redis-url", replica.url),
                 "is not a replica of")
        # the right one passes ROLE; the primary then embeds with another model: refused
        out = _replica(tmp_path, stub.url, primary.url, "--redis-url", replica.url)
        _refused(out, "the primary embeds with 'http:bge-m3', this replica with 'use-multilingual-v3'")
    finally:
        stub.close()
    assert replica.client().info("replication")["role"] == "slave"    # a server it did not start: left alone
    with pytest.raises(sync_redis.ReadOnlyError):
        replica.client().set("zhiyi:x", "1")


def test_a_refused_key_and_a_primary_never_reached(tmp_path, redis_pair) -> None:
    primary, replica = redis_pair
    stub = StubPrimary(ops_status=401)
    try:
        _refused(_replica(tmp_path, stub.url, primary.url, "--redis-url", replica.url),
                 "the primary refused this replica's key for instance rep-cli")
    finally:
        stub.close()
    _refused(_replica(tmp_path, f"http://127.0.0.1:{free_port()}", primary.url, "--redis-url", replica.url),
             "cannot be reached, and this replica never reached it")
