"""The README's quickstart, run verbatim against what `make up` runs: the Makefile's recipe
(`.venv/bin/zhiyi up --data-dir ./data`, a relative data dir) from a fresh directory, with no
Redis and no admin key configured. Every step is checked against what the README documents:
a `curl` shim first on PATH records each call's status line and body, so the block itself runs
unchanged (only the port differs)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest

from up_process import ROOT, free_port, request, start_make_up, stop

pytestmark = pytest.mark.slow  # runs `make up`, a real `zhiyi up`

CURL_SHIM = """#!/usr/bin/env bash
# records the status line and body of every call, in order; stdout and the exit status are curl's
n=$(( $(ls "$CALLS" | wc -l) / 3 ))
printf '%s\\n' "$@" > "$CALLS/$n.args"
{real} -D "$CALLS/$n.headers" "$@" | tee "$CALLS/$n.body"
exit ${{PIPESTATUS[0]}}
"""


def quickstart_script() -> str:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- quickstart:begin -->\s*```bash\n(.*?)```\s*<!-- quickstart:end -->", readme, re.S)
    assert block, "README quickstart block not found"
    return block.group(1)


def _tools() -> None:
    missing = [t for t in ("curl", "jq", "bash") if not shutil.which(t)]
    if missing:
        reason = f"the README quickstart needs {missing} (Debian: apt-get install {' '.join(missing)})"
        if os.environ.get("CI"):
            pytest.fail(reason)  # .ci/run installs them: missing there is a broken CI image
        pytest.skip("SKIPPED LOUDLY: " + reason)


def _calls(calls: Path) -> list[dict]:
    """[{method, path, query, status, body}] of the recorded curl calls, in order."""
    out = []
    n = 0
    while (calls / f"{n}.args").exists():
        args = (calls / f"{n}.args").read_text().splitlines()
        status = int((calls / f"{n}.headers").read_text().split()[1])
        url = next(a for a in args if a.startswith("http"))
        method = args[args.index("-X") + 1] if "-X" in args else "GET"
        body = (calls / f"{n}.body").read_text()
        parsed = urllib.parse.urlsplit(url)
        out.append({"method": method, "path": parsed.path, "query": parsed.query, "status": status,
                    "body": json.loads(body)})
        n += 1
    return out


def test_readme_quickstart_works_as_written_with_make_up(tmp_path):
    _tools()
    port = free_port()
    cwd = tmp_path / "checkout"      # `make up` runs in the checkout: ./data is relative to it
    cwd.mkdir()
    proc = start_make_up(port, cwd)
    data = cwd / "data"
    try:
        assert (data / "api_key").stat().st_mode & 0o777 == 0o600
        calls = tmp_path / "calls"
        calls.mkdir()
        shim_dir = tmp_path / "shim"
        shim_dir.mkdir()
        shim = shim_dir / "curl"
        shim.write_text(CURL_SHIM.format(real=shutil.which("curl")))
        shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
        script = quickstart_script()
        assert script.startswith("export ZHIYI=http://127.0.0.1:7821\n")
        script = script.replace("http://127.0.0.1:7821", f"http://127.0.0.1:{port}", 1)
        env = {**os.environ, "PATH": f"{shim_dir}:{os.environ['PATH']}", "CALLS": str(calls)}
        run = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, capture_output=True,
                             text=True, timeout=120, env=env)
        assert run.returncode == 0, run.stderr + run.stdout
        health, register, commit, recall_post, recall_get, batch, note, delete, stats, episode, view = _calls(calls)
        admin = (data / "api_key").read_text().strip()

        assert (health["path"], health["status"]) == ("/health", 200)
        assert health["body"]["status"] == "ok" and health["body"]["redis"]
        assert (register["path"], register["status"]) == ("/api/v1/agents/register", 201)
        reg = register["body"]
        assert reg["agent_id"] == "hermes-a06" and reg["api_key"] and reg["position"]
        assert "hermes-main" in reg["namespaces"]
        assert (commit["path"], commit["status"]) == ("/api/v1/commit", 201)
        com = commit["body"]
        assert com["namespace"] == "hermes-main" and com["version"] == 1 and com["duplicate"] is False
        for call in (recall_post, recall_get):   # the first recall is where a relative data dir broke
            assert (call["path"], call["status"]) == ("/api/v1/recall", 200), call
            body = call["body"]
            assert {"results", "namespaces", "position", "took_ms", "cached"} <= set(body)
            top = body["results"][0]
            assert top["memory_id"] == com["memory_id"] and "ComfyUI" in top["content"]
            assert {"memory_id", "content", "score", "similarity", "namespace", "category", "tags", "source",
                    "version", "timestamp", "freshness"} <= set(top)
            assert top["tags"] == ["comfyui", "ports"] and top["category"] == "fact"
        assert recall_get["method"] == "GET"
        assert (batch["path"], batch["status"]) == ("/api/v1/batch-commit", 201)
        assert len(batch["body"]["results"]) == 2 and batch["body"]["position"]
        assert note["status"] == 201
        assert (delete["method"], delete["status"]) == ("DELETE", 200)
        assert delete["body"]["memory_id"] == note["body"]["memory_id"] and delete["body"]["version"] == 2
        assert (stats["path"], stats["status"]) == ("/api/v1/stats", 200)
        assert stats["body"]["memories"]["total"] == 3  # comfy + 2 batch; the temporary note is deleted
        assert stats["body"]["events"]["last_position"]
        assert (episode["path"], episode["status"]) == ("/api/v1/episodes", 201), episode
        assert episode["body"]["episode_id"] == "chat-1204" and episode["body"]["namespace"] == "hermes-main"
        assert (view["path"], view["status"]) == ("/api/v1/episodes/chat-1204", 200), view
        assert view["body"]["distill_status"] in ("pending", "processing", "completed"), view

        # the other reads that answered 500 with a relative data dir
        mem, agent = com["memory_id"], reg["api_key"]
        status, versions = request(port, "GET", f"/api/v1/memory/{mem}/versions", agent)
        assert status == 200 and versions["version"] == 1, versions
        status, graph = request(port, "GET", "/api/v1/graph/stats", admin)
        assert status == 200 and graph["nodes"] >= 3, graph
        status, added = request(port, "POST", "/api/v1/admin/synonyms", admin,
                                {"term": "port", "synonyms": ["端口"]})
        assert status == 201, added
        status, listed = request(port, "GET", f"/api/v1/admin/synonyms?after={added['position']}", admin)
        assert status == 200 and listed["total"] == 1, listed
        # the episode was distilled (by the rules: no LLM configured) into a memory recall finds
        for _ in range(100):
            status, ep = request(port, "GET", "/api/v1/episodes/chat-1204", agent)
            if ep.get("distill_status") == "completed":
                break
            time.sleep(0.1)
        assert status == 200 and ep["distill_status"] == "completed" and len(ep["distilled_to"]) == 1, ep
        for _ in range(100):   # the distilled memory reaches the memories projection moments later
            status, found = request(port, "GET", "/api/v1/recall?query=NAS%20%E5%A4%87%E4%BB%BD&cache=false", agent)
            if found.get("results") and found["results"][0]["memory_id"] == ep["distilled_to"][0]:
                break
            time.sleep(0.1)
        assert status == 200 and found["results"][0]["memory_id"] == ep["distilled_to"][0], found
    finally:
        out = stop(proc)
    assert proc.returncode == 0, out
    for failure in ("Traceback", "request.failed", "reactions.failed", "relative path"):
        assert failure not in out, out[-6000:]   # e.g. the validator reaction failing on every commit
    assert not (data / "redis_url").exists()  # the private Redis was shut down

    # The log survives a restart (AOF), and the projections resume from their checkpoints.
    proc = start_make_up(port, cwd)
    try:
        status, stats = request(port, "GET", "/api/v1/stats", (data / "api_key").read_text().strip())
        assert status == 200
        assert stats["memories"]["total"] == 4 and stats["events"]["total"] >= 7   # 3 + the distilled one
    finally:
        stop(proc)
