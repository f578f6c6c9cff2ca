"""Issue 11, point 3, through the real `zhiyi up` (projectors in their child process) on the test
session's own Redis: FLUSHALL while it runs → the next read is 503 `log_reset`, so is /health (in
the error shape), an old agent key writes nothing (503, not 401); `zhiyi replay --in-place` → it
serves again, and the live projections' digests equal a fresh rebuild's."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import redis as sync_redis
import up_process

pytestmark = pytest.mark.slow  # starts a real `zhiyi up`/`zhiyi` process

ADMIN = "up-log-reset-admin"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(redis_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ZHIYI_DATA_DIR", "ZHIYI_PORT", "ZHIYI_HOST")}
    env.update(REDIS_URL=redis_url, API_KEY=ADMIN, OPENBLAS_NUM_THREADS="1")
    return env


def _zhiyi(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gateway.cli.main", *args], env=env, capture_output=True, text=True,
                          timeout=300)


def _http(port: int, method: str, path: str, key: str | None = ADMIN, body: dict | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json", **({"X-API-Key": key} if key else {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


def _wait_health(port: int, status: int, timeout_s: float, proc: subprocess.Popen) -> dict:
    deadline = time.monotonic() + timeout_s
    got: tuple[int, dict] | None = None
    while time.monotonic() < deadline:
        assert proc.poll() is None, "zhiyi up exited"
        try:
            got = _http(port, "GET", "/health", None)
            if got[0] == status and (status != 200 or got[1]["status"] == "ok"):
                return got[1]
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"/health never answered {status}: {got}")


def _settled(port: int, proc: subprocess.Popen, timeout_s: float = 60.0) -> str:
    """Every projector at the end of the log, and the log quiet for a second (recall audits appended)."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        body = _wait_health(port, 200, timeout_s, proc)
        caught_up = all(p["caught_up"] for p in body["projectors"].values())
        if caught_up and body["log"]["last_position"] == last:
            return last
        last = body["log"]["last_position"] if caught_up else None
        time.sleep(1.0)
    raise AssertionError("the projections never settled")


def _digests(doc: dict) -> dict[str, tuple[str, str]]:
    return {row["projection"]: (row["position"], row["digest"]) for row in doc["projections"]}


def test_flushall_under_zhiyi_up_then_replay_in_place(redis_url: str, tmp_path: Path) -> None:
    port, data = _port(), tmp_path / "data"
    env = _env(redis_url)
    # output to a file (up_process): a pipe nobody reads fills up and blocks the server's logging
    proc = up_process.start_up(data, port, tmp_path, env)
    out = ""
    try:
        status, reg = _http(port, "POST", "/api/v1/agents/register", body={"agent_id": "ana"})
        assert status == 201
        key = reg["api_key"]
        for text in ("green tea at nine", "the deploy window is friday"):
            status, committed = _http(port, "POST", "/api/v1/commit", key, {"content": text})
            assert status == 201
        status, got = _http(port, "POST", "/api/v1/recall", key,
                            {"query": "tea", "after": committed["position"], "cache": False})
        assert status == 200 and got["results"]

        sync_redis.Redis.from_url(redis_url).flushall()  # the log is wiped under the running zhiyi
        status, got = _http(port, "POST", "/api/v1/recall", key, {"query": "tea", "cache": False})
        assert (status, got["error"]["code"]) == (503, "log_reset"), got  # the very next read
        assert "zhiyi replay --in-place" in got["error"]["message"]
        status, got = _http(port, "GET", "/health", None)
        assert status == 503 and set(got) == {"error"} and got["error"]["code"] == "log_reset", got
        assert got["error"]["details"]["status"] == "log_reset" and "projectors" in got["error"]["details"]
        status, got = _http(port, "POST", "/api/v1/commit", key, {"content": "written after the wipe"})
        assert (status, got["error"]["code"]) == (503, "log_reset"), got  # not 401: the key index was wiped too
        time.sleep(1.5)  # background work (audits, reactions, the projector child) has had its chance
        assert sync_redis.Redis.from_url(redis_url).xlen("zhiyi:events") == 0
        assert proc.poll() is None

        done = _zhiyi("replay", "--in-place", "--json", "--data-dir", str(data), env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads(done.stdout.strip().splitlines()[-1])
        assert report["previous_epoch"] and report["epoch"] != report["previous_epoch"]
        assert Path(report["kept"]) == (data / f"projections.{report['previous_epoch']}").resolve()
        assert (Path(report["kept"]) / "memories").is_dir()

        _wait_health(port, 200, 30, proc)  # served again, without a restart
        status, reg = _http(port, "POST", "/api/v1/agents/register", body={"agent_id": "ana"})
        assert status == 201  # registered again: the first registration was in the lost log
        key = reg["api_key"]
        status, committed = _http(port, "POST", "/api/v1/commit", key, {"content": "oolong after lunch"})
        assert status == 201
        status, got = _http(port, "POST", "/api/v1/recall", key,
                            {"query": "tea", "after": committed["position"], "cache": False})
        assert status == 200 and [r["content"] for r in got["results"]] == ["oolong after lunch"], got

        for attempt in range(3):  # compare at one position: retry if an audit landed in between
            at = _settled(port, proc)
            live = _zhiyi("digest", "--json", "--data-dir", str(data), env=env)
            assert live.returncode == 0, live.stderr[-3000:]
            fresh = _zhiyi("replay", "--json", "--into", str(tmp_path / f"fresh{attempt}"), "--data-dir", str(data),
                           env=env)
            assert fresh.returncode == 0, fresh.stderr[-3000:]
            live_d, fresh_d = _digests(json.loads(live.stdout)), _digests(json.loads(fresh.stdout))
            if all(pos == at for pos, _ in fresh_d.values()) and all(p == at for p, _ in live_d.values()):
                break
        assert live_d == fresh_d
    finally:
        out = up_process.stop(proc)
    assert proc.returncode == 0, out[-4000:]
    assert out.count("projectors.running") == 1, "the projector child was restarted instead of waiting"
    assert "projectors.rebuilt" in out
