"""Running the real `zhiyi up` as a subprocess for the e2e tests: the console script the Makefile
runs (`.venv/bin/zhiyi`), with the Makefile's own `up` recipe when asked, waited for until
healthy, stopped with SIGTERM."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children(pid: int) -> dict[int, str]:
    """pid -> command line of the processes whose parent is `pid` (read from /proc)."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue
    return out


def zhiyi_bin() -> Path:
    """The `zhiyi` console script of the environment running the tests (`.venv/bin/zhiyi`)."""
    path = Path(sys.executable).parent / "zhiyi"
    assert path.exists(), f"{path} missing: install the project (`pip install -e .`, as `make install` does)"
    return path


def makefile_up_command() -> str:
    """The Makefile's `up` recipe as a shell command, `$(BIN)` being this environment's bin dir."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^up:.*\n\t(.+)$", makefile, re.M)
    assert recipe, "no `up` recipe in the Makefile"
    return recipe.group(1).replace("$(BIN)", str(zhiyi_bin().parent)).replace("$$", "$")


def base_env(**extra: str) -> dict[str, str]:
    """The caller's environment without a Redis or an admin key configured (the Makefile's defaults)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("REDIS_URL", "API_KEY", "ZHIYI_DATA_DIR", "ZHIYI_HOST", "ZHIYI_PORT")}
    env["OPENBLAS_NUM_THREADS"] = "1"
    env["ZHIYI_RATE_LIMITS"] = "off"     # the test session runs without quotas, but for the tests of them
    env.update(extra)
    return env


def start(argv: list[str], port: int, cwd: Path, env: dict[str, str] | None = None,
          timeout_s: float = 90.0) -> subprocess.Popen:
    """Start `argv` (a `zhiyi up`) in `cwd` and wait until /health on `port` answers ok. Its output
    goes to a file (`output(proc)`): a pipe nobody reads fills up and blocks the server's logging."""
    log_file = tempfile.NamedTemporaryFile("w+", prefix="zhiyi-up-", suffix=".log", delete=False)
    proc = subprocess.Popen(argv, cwd=cwd, env=env if env is not None else base_env(),
                            stdout=log_file, stderr=subprocess.STDOUT, text=True)
    proc.log_path = Path(log_file.name)  # type: ignore[attr-defined]
    log_file.close()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"zhiyi up exited: {output(proc)}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as resp:
                if json.load(resp)["status"] == "ok":
                    return proc
        except (OSError, ValueError):
            time.sleep(0.2)
    proc.kill()
    proc.wait()
    raise AssertionError(f"zhiyi up did not become healthy: {output(proc)[-4000:]}")


def output(proc: subprocess.Popen) -> str:
    """Everything the process wrote so far (stdout and stderr)."""
    return proc.log_path.read_text(errors="replace")  # type: ignore[attr-defined]


def start_up(data_dir: Path | str, port: int, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """`zhiyi up --data-dir <data_dir> --port <port>` through the console script."""
    return start([str(zhiyi_bin()), "up", "--data-dir", str(data_dir), "--port", str(port)], port, cwd, env)


def start_make_up(port: int, cwd: Path) -> subprocess.Popen:
    """Exactly what `make up` runs (its recipe, `--data-dir ./data` relative to `cwd`), on `port`."""
    env = base_env(ZHIYI_PORT=str(port))
    del env["ZHIYI_RATE_LIMITS"]         # as a user runs it: the seed's quotas on
    return start(["bash", "-c", "exec " + makefile_up_command()], port, cwd, env)


def stop(proc: subprocess.Popen, timeout_s: float = 60.0) -> str:
    """SIGTERM, wait, and return the process's whole output (its log file is then removed)."""
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=timeout_s)
    out = output(proc)
    proc.log_path.unlink(missing_ok=True)  # type: ignore[attr-defined]
    return out


def request(port: int, method: str, path: str, key: str | None = None, body: dict | None = None,
            timeout_s: float = 30.0, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    """One HTTP call: (status, JSON body); an HTTP error status is returned, not raised."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={**({"X-API-Key": key} if key else {}), "Content-Type": "application/json",
                                          **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw)
        except ValueError:
            return exc.code, {"raw": raw.decode(errors="replace")}
