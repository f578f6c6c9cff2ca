"""The README's quickstart, run as written against `zhiyi up` on a fresh data dir (no Redis configured)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _quickstart_script() -> str:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- quickstart:begin -->\s*```bash\n(.*?)```\s*<!-- quickstart:end -->", readme, re.S)
    assert block, "README quickstart block not found"
    return block.group(1)


def _start(data_dir: Path, port: int, cwd: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "API_KEY")}
    env["OPENBLAS_NUM_THREADS"] = "1"
    proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "up", "--data-dir", str(data_dir),
                             "--port", str(port)], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"zhiyi up exited: {proc.stdout.read()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as resp:
                if json.load(resp)["status"] == "ok":
                    return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("zhiyi up did not become healthy")


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    return out


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")), reason="the README examples use curl and jq")
def test_readme_quickstart_works_as_written(tmp_path):
    port = _free_port()
    proc = _start(tmp_path / "data", port, tmp_path)
    try:
        key_file = tmp_path / "data" / "api_key"
        assert key_file.stat().st_mode & 0o777 == 0o600
        script = _quickstart_script().replace("127.0.0.1:7821", f"127.0.0.1:{port}")
        run = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, run.stderr + run.stdout
        docs = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
        health, recall_post, recall_get, batch, stats = docs
        assert health["status"] == "ok"
        assert "ComfyUI" in recall_post["results"][0]["content"]
        assert "ComfyUI" in recall_get["results"][0]["content"]
        assert len(batch["results"]) == 2
        assert stats["memories"]["total"] == 3  # comfy + 2 batch; the temporary note is deleted
    finally:
        out = _stop(proc)
    assert proc.returncode == 0, out
    assert not (tmp_path / "data" / "redis_url").exists()  # the private Redis was shut down

    # The log survives a restart (AOF), and the projections resume from their checkpoints.
    proc = _start(tmp_path / "data", port, tmp_path)
    try:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/stats",
                                     headers={"X-API-Key": (tmp_path / "data" / "api_key").read_text().strip()})
        with urllib.request.urlopen(req, timeout=5) as resp:
            stats = json.load(resp)
        assert stats["memories"]["total"] == 3 and stats["events"]["total"] >= 7
    finally:
        _stop(proc)
