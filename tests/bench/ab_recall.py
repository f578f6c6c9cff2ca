"""Paired A/B of two gateway checkouts' recall path on a shared, noisy machine (issue 19): one
private Redis, one data dir kept between runs (`--keep`: the first run ingests N memories with the
real model, later runs reuse them), one `zhiyi project` process, and two `zhiyi serve` gateways,
each from its own checkout (`git archive HEAD | tar -x -C /tmp/base`, say), alternating c=16
throughput windows A B B A A B ... Unlike tests/bench/ab_gateways.py, the CPU split counts only
this benchmark's own processes (other benchmarks' gateways and embedders on the machine do not
count): per request, each gateway's event-loop thread, its other threads, its query-embedding
child, the projectors, Redis and the client; the loop thread's and the embedder's figures are the
ones a change to the recall path moves, and they move much less with the machine's load than
recalls/s do.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/ab_recall.py --keep /tmp/ab20k --n 20000 \
        --root-a /tmp/base --root-b . [--rounds 4] [--window 8]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from _harness import ROOT, free_port, percentile, private_redis, thread_ticks, wait_healthy  # noqa: E402
from recall import ADMIN, bench_key, closed_loop, latency, query  # noqa: E402


def start(command: str, redis_url: str, data_dir: Path, env_extra: dict, port: int | None, root: Path,
          log: Path) -> subprocess.Popen:
    env = dict(os.environ, REDIS_URL=redis_url, API_KEY=ADMIN, OPENBLAS_NUM_THREADS="1", ZHIYI_LOG_LEVEL="warning",
               ZHIYI_NO_REACTIONS="1", ZHIYI_RATE_LIMITS="off", **env_extra)
    argv = [sys.executable, "-m", "gateway.cli.main", command, "--data-dir", str(data_dir)]
    if port:
        argv += ["--port", str(port)]
    with open(log, "w") as out:
        return subprocess.Popen(argv, cwd=root, env=env, stdout=out, stderr=out)


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            out.setdefault(ppid, []).append(int(pid))
    return out


def _ticks(pid: int) -> dict[str, int]:
    """user+system ticks of a process: its first thread ('main') and the others ('other')."""
    out = {"main": 0, "other": 0}
    for tid, ticks in thread_ticks(pid).items():
        out["main" if tid == pid else "other"] += ticks
    return out


class TreeMeter:
    """CPU per request of the labelled processes (and their descendants, e.g. the query embedder)."""

    def __init__(self, labelled: dict[str, int]) -> None:
        self.labelled = labelled
        self._start = self._sample()
        self._t = time.perf_counter()

    def _sample(self) -> dict[str, int]:
        kids = _children()
        out: dict[str, int] = {}
        for label, pid in self.labelled.items():
            for part, ticks in _ticks(pid).items():
                out[f"{label} {part}"] = out.get(f"{label} {part}", 0) + ticks
            todo = list(kids.get(pid, [])) if label != "client" else []   # the client started all the others
            while todo:   # descendants: the query embedder (multiprocessing spawn), ...
                child = todo.pop()
                todo += kids.get(child, [])
                out[f"{label} children"] = out.get(f"{label} children", 0) + sum(_ticks(child).values())
        return out

    def report(self, requests: int) -> str:
        end, hz = self._sample(), os.sysconf("SC_CLK_TCK")
        parts = [f"{k} {(v - self._start.get(k, 0)) / hz * 1000 / requests:.2f}" for k, v in sorted(end.items())
                 if v - self._start.get(k, 0) > 0]
        return "CPU ms per request: " + ", ".join(parts)


async def window(s, base: str, h: dict, queries: list[str], label: str, concurrency: int, duration: float,
                 meter_pids: dict[str, int]) -> float:
    meter = TreeMeter(meter_pids)
    lat, elapsed = await closed_loop(s, base, h, queries, False, concurrency, duration)
    done = len(lat)
    rate = done / elapsed
    print(f"{label}: c={concurrency}: {rate:,.0f} recalls/s (p50 {percentile(lat, 50):.1f} ms, "
          f"p99 {percentile(lat, 99):.1f} ms)\n  {meter.report(done)}", flush=True)
    return rate


async def main(args) -> None:
    rng = random.Random(7)
    keep = Path(args.keep).resolve()
    keep.mkdir(parents=True, exist_ok=True)
    with private_redis(workdir=keep / "redis") as url:
        data = keep / "data"
        marker = keep / "ingested"
        procs = [start("project", url, data, {}, None, ROOT, keep / "log-project.txt")]
        pids = {"projectors": procs[0].pid, "client": os.getpid()}
        ports = {"A": free_port(), "B": free_port()}
        try:
            for k, root in (("A", args.root_a), ("B", args.root_b)):
                log = keep / f"log-serve-{k}.txt"
                procs.append(start("serve", url, data, {"ZHIYI_INSTANCE_ID": f"ab-recall-{k}"}, ports[k],
                                   Path(root).resolve(), log))
                pids[k] = procs[-1].pid
                wait_healthy(ports[k], procs[-1], timeout_s=300, log=log)
            redis_pid = next((int(p) for p in os.listdir("/proc") if p.isdigit() and
                              f"127.0.0.1:{url.split(':')[2].split('/')[0]}".encode() in
                              Path(f"/proc/{p}/cmdline").read_bytes()), None) if Path("/proc").exists() else None
            if redis_pid:
                pids["redis"] = redis_pid
            base = {k: f"http://127.0.0.1:{p}" for k, p in ports.items()}
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as s:
                key = await bench_key(s, base["A"], args.n, rng, args.settle, marker)
                h = {"X-API-Key": key}
                for k in ("A", "B"):  # loads each one's serving index and model
                    await latency(s, base[k], h, [query(rng, -i) for i in range(40)], False, f"warm-up {k}")
                rates: dict[str, list[float]] = {"A": [], "B": []}
                for r_ in range(args.rounds):
                    qs = [query(rng, 10 ** 5 + r_ * 10 ** 4 + i) for i in range(5000)]
                    for k in ("A", "B") if r_ % 2 == 0 else ("B", "A"):
                        meter = {f"{k} gateway": pids[k], "projectors": pids["projectors"], "client": pids["client"],
                                 **({"redis": pids["redis"]} if "redis" in pids else {})}
                        rates[k].append(await window(s, base[k], h, qs, f"{k} window {r_}", args.concurrency,
                                                     args.window, meter))
                for k in ("A", "B"):
                    print(f"{k}: c={args.concurrency} windows {', '.join(f'{x:.0f}' for x in rates[k])} recalls/s, "
                          f"mean {sum(rates[k]) / len(rates[k]):.0f}", flush=True)
                for k in ("A", "B"):
                    await latency(s, base[k], h, [query(rng, 3 * 10 ** 5 + i) for i in range(args.queries)], False,
                                  f"{k} cache off")
        finally:
            for p in procs:
                p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--keep", required=True, help="Redis and data dir, kept between runs")
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--root-a", default=str(ROOT), help="checkout gateway A runs from")
    p.add_argument("--root-b", default=str(ROOT), help="checkout gateway B runs from")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--window", type=float, default=8.0, help="seconds per throughput window")
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--queries", type=int, default=200, help="c=1 latency queries per gateway at the end")
    p.add_argument("--settle", type=float, default=25.0)
    asyncio.run(main(p.parse_args()))
