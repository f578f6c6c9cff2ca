"""`zhiyi up` runs its projectors in a supervised child process (gateway/process/projector_process.py):
writes are projected there, a crashed child is started again, and stopping the gateway stops it.
Recall queries are embedded in another child (projections/models/embedding_process.py), likewise
replaced when it dies and gone with the gateway."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from eventually import eventually_sync
from up_process import children as _children
from up_process import free_port as _free_port
from up_process import start_up as _start
from up_process import stop as _stop

pytestmark = pytest.mark.slow  # starts a real `zhiyi up`/`zhiyi` process

ROOT = Path(__file__).resolve().parents[2]


def _projector_child(pid: int, timeout_s: float = 20.0, not_pid: int | None = None) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = [p for p, cmd in _children(pid).items() if "gateway.cli.main project" in cmd and p != not_pid]
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no projector child of {pid}: {_children(pid)}")


def _embedder_child(pid: int) -> int | None:
    """The gateway's query-embedding child (projections.models.embedding_process), if it runs."""
    found = [p for p, cmd in _children(pid).items() if "multiprocessing" in cmd]
    return found[0] if found else None


def _call(port: int, key: str, path: str, body: dict) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(), method="POST",
                                 headers={"X-API-Key": key, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)


def _agent_key(port: int, admin: str) -> str:
    return _call(port, admin, "/api/v1/agents/register", {"agent_id": "proc-test"})["api_key"]


def _commit_and_recall(port: int, key: str, text: str) -> None:
    committed = _call(port, key, "/api/v1/commit", {"content": text})
    got = _call(port, key, "/api/v1/recall", {"query": text, "after": committed["position"], "cache": False})
    assert got["results"] and got["results"][0]["content"] == text


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").exists() and " Z " in Path(f"/proc/{pid}/stat").read_text()


def test_projectors_run_in_a_supervised_child_process(tmp_path: Path) -> None:
    port = _free_port()
    proc = _start(tmp_path / "data", port, tmp_path)
    child = embedder = None
    try:
        key = _agent_key(port, (tmp_path / "data" / "api_key").read_text().strip())
        child = _projector_child(proc.pid)
        _commit_and_recall(port, key, "the staging database listens on port 5433")

        os.kill(child, signal.SIGKILL)  # a crash: the gateway starts it again and keeps serving
        again = _projector_child(proc.pid, not_pid=child)
        assert again != child
        child = again
        ready = tmp_path / "data" / ".projectors-ready"   # touched again once the new one runs
        eventually_sync(ready.exists, timeout_s=60, interval_s=0.1, what="the restarted projectors' ready file")
        _commit_and_recall(port, key, "nightly backups run at 03:00 with restic")

        embedder = _embedder_child(proc.pid)   # recall queries are embedded in a child of the gateway
        assert embedder is not None
        os.kill(embedder, signal.SIGKILL)
        eventually_sync(lambda: _gone(embedder), timeout_s=10, interval_s=0.05, what="the killed query embedder gone")
        _commit_and_recall(port, key, "the billing service depends on PostgreSQL 15")  # a fresh one embeds it
        embedder = _embedder_child(proc.pid)
        assert embedder is not None
    finally:
        out = _stop(proc)
    assert proc.returncode == 0, out
    assert "projector_process.exited" in out
    # the children (projectors, query model) start as fresh interpreters: nothing runs in a forked copy
    # of the threaded gateway, so lancedb's after-fork hook never fires (its output goes to ours)
    assert "fork support is experimental" not in out, out[-4000:]
    assert out.count("projectors.running") >= 2   # the child's own output is in `out`: first start, restart
    eventually_sync(lambda: child is None or _gone(child), timeout_s=10, interval_s=0.1,
                    what="the projector process gone with the gateway (it outlived it)")
    assert embedder is None or _gone(embedder), "the query embedder outlived the gateway"


def test_the_projector_child_goes_when_the_gateway_is_killed(tmp_path: Path) -> None:
    """PDEATHSIG, asked for by the child itself (`--parent-pid`): no orphaned second writer."""
    port = _free_port()
    proc = _start(tmp_path / "data", port, tmp_path)
    try:
        child = _projector_child(proc.pid)
        proc.kill()
        proc.wait(timeout=30)
        eventually_sync(lambda: _gone(child), timeout_s=15, interval_s=0.1,
                        what="the projector process gone with the killed gateway (it outlived it)")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        proc.log_path.unlink(missing_ok=True)
        url_file = tmp_path / "data" / "redis_url"   # the private Redis outlives a SIGKILL'd gateway
        if url_file.exists():
            import redis as sync_redis

            with contextlib.suppress(Exception):
                sync_redis.Redis.from_url(url_file.read_text().strip()).shutdown(nosave=True)


def test_up_can_keep_the_projectors_and_the_query_model_in_process(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ZHIYI_INPROCESS_PROJECTORS", "1")
    monkeypatch.setenv("ZHIYI_QUERY_EMBEDDING_PROCESS", "0")
    port = _free_port()
    proc = _start(tmp_path / "data", port, tmp_path)
    try:
        key = _agent_key(port, (tmp_path / "data" / "api_key").read_text().strip())
        assert not [c for c in _children(proc.pid).values() if "gateway.cli.main project" in c]
        _commit_and_recall(port, key, "the GPU server has an RTX 3050")
        assert _embedder_child(proc.pid) is None
    finally:
        out = _stop(proc)
    assert proc.returncode == 0, out


if __name__ == "__main__":  # pragma: no cover
    sys.exit(subprocess.call([sys.executable, "-m", "pytest", __file__]))


def test_instances_mark_a_killed_gateway_down_and_a_restart_reuses_its_id(tmp_path: Path) -> None:
    """Two gateways on one Redis: `zhiyi up` (A) and a `zhiyi serve` (B, its own data dir). B killed is
    listed down within 40 s; started again it has the same id (kept in its data dir); a second live
    process with B's id is refused."""
    from up_process import base_env, request, start, zhiyi_bin

    port_a, port_b = _free_port(), _free_port()
    a = _start(tmp_path / "a", port_a, tmp_path)
    b = b_again = None
    try:
        admin = (tmp_path / "a" / "api_key").read_text().strip()
        env = base_env(REDIS_URL=(tmp_path / "a" / "redis_url").read_text().strip(), API_KEY=admin,
                       ZHIYI_QUERY_EMBEDDING_PROCESS="0")
        serve_b = [str(zhiyi_bin()), "serve", "--data-dir", str(tmp_path / "b")]
        b = start(serve_b + ["--port", str(port_b)], port_b, tmp_path, env)
        b_id = (tmp_path / "b" / "instance_id").read_text().strip()
        a_id = (tmp_path / "a" / "instance_id").read_text().strip()

        def listed() -> dict[tuple[str, str], str]:
            status, body = request(port_a, "GET", "/api/v1/instances", admin)
            assert status == 200, body
            return {(i["instance_id"], i["role"]): i["status"] for i in body["instances"]}

        eventually_sync(lambda: listed().get((b_id, "gateway")) == "up", timeout_s=15, interval_s=0.2,
                        what="gateway B listed up")
        assert listed()[(a_id, "gateway")] == "up" and listed()[(a_id, "projector")] == "up"
        # a second live process with B's id is refused
        twin = subprocess.run(serve_b + ["--port", str(_free_port())], env=env, cwd=tmp_path, capture_output=True,
                              text=True, timeout=120)
        assert twin.returncode != 0 and "another live gateway process holds instance id" in twin.stdout + twin.stderr
        b.kill()
        b.wait(timeout=30)
        started = time.monotonic()
        eventually_sync(lambda: listed().get((b_id, "gateway")) == "down", timeout_s=45, interval_s=0.5,
                        what="gateway B listed down")
        assert time.monotonic() - started < 40
        b_again = start(serve_b + ["--port", str(port_b)], port_b, tmp_path, env)
        assert (tmp_path / "b" / "instance_id").read_text().strip() == b_id
        eventually_sync(lambda: listed().get((b_id, "gateway")) == "up", timeout_s=15, interval_s=0.2,
                        what="gateway B up again under the same id")
    finally:
        for proc in (b, b_again):
            if proc is not None and proc.poll() is None:
                _stop(proc)
        _stop(a)
