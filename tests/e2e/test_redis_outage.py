"""A 10 s Redis outage under load, through the real `zhiyi up` (gateway + projector child) and a
redis-server the test stops and starts again on the same port and directory: no process exits,
writes during the outage answer 503 `unavailable` (fast), recalls answer 200 before and after, the
projections resume, and no recall audit is lost or doubled."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from events.redis import keys
from events.codec import decode
from eventually import eventually_sync
from redis_process import RestartableRedis
from test_up_processes import _children, _projector_child
from up_process import base_env, free_port, request, start_up, stop

pytestmark = pytest.mark.slow  # starts a real `zhiyi up`/`zhiyi` process

OUTAGE_S = 10.0
RESUME_S = 5.0     # background loops and clients back within this of Redis returning


@dataclass
class Call:
    kind: str        # "recall" | "commit"
    started: float
    ended: float
    status: int
    code: str = ""


def _load(port: int, key: str, kind: str, calls: list[Call], halt: threading.Event) -> None:
    i = 0
    while not halt.is_set():
        i += 1
        started = time.monotonic()
        try:
            if kind == "recall":
                status, body = request(port, "POST", "/api/v1/recall", key,
                                       {"query": f"which port does service {i % 7} use", "cache": False},
                                       timeout_s=15)
            else:
                status, body = request(port, "POST", "/api/v1/commit", key,
                                       {"content": f"service {i} listens on port {8000 + i}"}, timeout_s=15)
            code = body.get("error", {}).get("code", "") if isinstance(body, dict) else ""
        except OSError as exc:      # no answer at all (a timeout): recorded, the load goes on
            status, code = 0, f"{type(exc).__name__}: {exc}"
        calls.append(Call(kind, started, time.monotonic(), status, code))
        time.sleep(0.02)


def _recall_audits(server: RestartableRedis) -> int:
    return sum(1 for pos, fields in server.client().xrange(keys.STREAM)
               if decode(pos, fields).type == "recall.served")


def test_a_redis_outage_under_load_loses_nothing_and_kills_nothing(tmp_path: Path) -> None:
    server = RestartableRedis(tmp_path / "redis").start()
    port = free_port()
    proc = start_up(tmp_path / "data", port, tmp_path, env=base_env(REDIS_URL=server.url))
    halt = threading.Event()
    calls: list[Call] = []
    threads: list[threading.Thread] = []
    try:
        admin = (tmp_path / "data" / "api_key").read_text().strip()
        status, reg = request(port, "POST", "/api/v1/agents/register", admin, {"agent_id": "outage"})
        assert status == 201, reg
        key = reg["api_key"]
        child = _projector_child(proc.pid)
        status, _ = request(port, "POST", "/api/v1/recall", key, {"query": "warm up"}, timeout_s=60)  # loads
        assert status == 200                                   # the query model's child
        threads = [threading.Thread(target=_load, args=(port, key, kind, calls, halt), daemon=True)
                   for kind in ("recall", "recall", "commit")]
        for t in threads:
            t.start()
        time.sleep(3)
        stopping_at = time.monotonic()
        server.stop()
        down_at = time.monotonic()      # a write in flight while it stopped may answer outcome_unknown
        time.sleep(OUTAGE_S)
        up_at = time.monotonic()
        server.start()
        time.sleep(RESUME_S + 3)
        halt.set()
        for t in threads:
            t.join(timeout=20)

        # nobody exited: the gateway and the projector child keep their pids
        assert proc.poll() is None
        assert child in _children(proc.pid), "the projector child exited or was replaced"

        before = [c for c in calls if c.ended < stopping_at]
        during = [c for c in calls if c.started > down_at and c.ended < up_at]
        after = [c for c in calls if c.started > up_at + RESUME_S]
        assert all(c.status != 500 for c in calls), [c for c in calls if c.status == 500][:3]
        for phase in (before, after):
            recalls = [c for c in phase if c.kind == "recall"]
            assert recalls and all(c.status == 200 for c in recalls), [c for c in recalls if c.status != 200][:3]
            commits = [c for c in phase if c.kind == "commit"]
            assert commits and all(c.status == 201 for c in commits), [c for c in commits if c.status != 201][:3]
        writes = [c for c in during if c.kind == "commit"]
        assert writes and all((c.status, c.code) == (503, "unavailable") for c in writes), writes[:3]
        assert max(c.ended - c.started for c in writes) < 2.0      # they fail fast

        # the projections resumed: a commit after the outage is recalled (read-your-writes)
        status, committed = request(port, "POST", "/api/v1/commit", key, {"content": "the outage ended at noon"})
        assert status == 201, committed
        status, got = request(port, "POST", "/api/v1/recall", key,
                              {"query": "when did the outage end", "after": committed["position"], "cache": False})
        assert status == 200 and got["results"][0]["content"] == "the outage ended at noon", got

        # every answered recall has its audit in the log, once (cached or not, each 200 recall is audited)
        answered = sum(1 for c in calls if c.kind == "recall" and c.status == 200) + 2   # + warm-up and check
        eventually_sync(lambda: _recall_audits(server) >= answered, timeout_s=15, interval_s=0.2,
                        what=f"{answered} recall.served audits in the log")
        time.sleep(0.5)   # and no more after them
        assert _recall_audits(server) == answered
        assert not list((tmp_path / "data" / "audit-spill").glob("*.json"))
    finally:
        halt.set()
        out = stop(proc)
        server.stop()
    assert proc.returncode == 0, out[-4000:]
    assert "projector_process.exited" not in out
