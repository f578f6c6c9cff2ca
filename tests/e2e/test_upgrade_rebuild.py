"""Projections built by an older zhiyi (another memories schema) on a data dir with its own Redis,
as `make up` leaves it: `zhiyi up` refuses to start and says what to run; `zhiyi replay --in-place`
(with zhiyi stopped and REDIS_URL unset) starts the data dir's Redis for the command, rebuilds,
keeps the old projections beside, and `zhiyi up` then serves the old memories and folds new ones."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from up_process import base_env, free_port, request, start_up, stop, zhiyi_bin

from projections.memories.schema import SCHEMA_VERSION

pytestmark = pytest.mark.slow  # starts a real `zhiyi up`/`zhiyi` process

ADMIN = "upgrade-admin"


def _zhiyi(*args: str, cwd: Path, timeout_s: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(zhiyi_bin()), *args], cwd=cwd, env=base_env(API_KEY=ADMIN), capture_output=True,
                          text=True, timeout=timeout_s)


def _memories_checkpoint(data: Path) -> Path:
    return data / "projections" / "memories" / "checkpoint.json"


def test_an_older_build_s_projections_are_refused_then_rebuilt_in_place(tmp_path: Path) -> None:
    data = tmp_path / "data"
    port = free_port()
    proc = start_up(data, port, tmp_path, base_env(API_KEY=ADMIN))
    try:
        status, reg = request(port, "POST", "/api/v1/agents/register", ADMIN, {"agent_id": "ana"})
        assert status == 201
        key = reg["api_key"]
        status, committed = request(port, "POST", "/api/v1/commit", key, {"content": "the build server is ci-7"})
        assert status == 201
        status, got = request(port, "POST", "/api/v1/recall", key,
                              {"query": "build server", "after": committed["position"], "cache": False})
        assert status == 200 and got["results"]
    finally:
        stop(proc)

    # what an older build left: the same checkpoint, an older memories schema
    path = _memories_checkpoint(data)
    doc = json.loads(path.read_text())
    doc["meta"]["schema"] = SCHEMA_VERSION - 1
    path.write_text(json.dumps(doc))

    refused = _zhiyi("up", "--data-dir", "./data", "--port", str(free_port()), cwd=tmp_path, timeout_s=60)
    assert refused.returncode == 2, refused.stdout[-2000:] + refused.stderr[-2000:]
    assert "zhiyi replay --in-place" in refused.stderr and f"'schema': {SCHEMA_VERSION - 1}" in refused.stderr

    rebuilt = _zhiyi("replay", "--in-place", "--json", "--data-dir", "./data", cwd=tmp_path)
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    report = json.loads(rebuilt.stdout.strip().splitlines()[-1])
    assert report["epoch"] == report["previous_epoch"]  # the same log: only the build changed
    kept = Path(report["kept"])
    assert json.loads((kept / "memories" / "checkpoint.json").read_text())["meta"]["schema"] == SCHEMA_VERSION - 1
    assert json.loads(path.read_text())["meta"]["schema"] == SCHEMA_VERSION
    assert not (data / "redis_url").exists()  # the Redis started for the command was stopped again

    proc = start_up(Path("./data"), port, tmp_path, base_env(API_KEY=ADMIN))
    try:
        status, got = request(port, "POST", "/api/v1/recall", key, {"query": "build server", "cache": False})
        assert status == 200 and [r["content"] for r in got["results"]] == ["the build server is ci-7"], got
        status, committed = request(port, "POST", "/api/v1/commit", key, {"content": "the build server moved to ci-8"})
        assert status == 201
        status, got = request(port, "POST", "/api/v1/recall", key,
                              {"query": "build server", "after": committed["position"], "cache": False})
        assert status == 200 and "the build server moved to ci-8" in [r["content"] for r in got["results"]], got
    finally:
        out = stop(proc)
    assert "RebuildRequired" not in out
