"""Paired A/B of a freshly started gateway between two checkouts: its RSS and recall latency (a script,
not a pytest test).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/ab_fresh_gateway.py --work-a DIR_A --root-a OTHER_CHECKOUT \
        [--work-b DIR_B] [--root-b .] [--rounds 2]

DIR_A / DIR_B are work dirs `tests/bench/million.py --data-dir DIR` left (the same --seed gives the same
memories; --work-b defaults to --work-a, but a projection an older checkout cannot read needs its own
ingest). Per round, in turns (A B, B A, ...): a private redis-server reloads the work dir's log, `zhiyi up`
(gateway, projector and query-embedder children; reactions and the conflict check off, rate limits off,
as million.py runs it) starts from the checkout, /health waits for the serving index; then, as agent
bench0, 20 warm-up recalls, 300 in its default scope and 150 with every agent's -main added (c=1, cache
off, distinct queries); then the RSS of the gateway process and of its children. A checkout is a `git
worktree` with this checkout's .venv linked in.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp

import million_phases as phases  # noqa: E402
from _harness import ROOT, free_port, percentile, private_redis, wait_healthy  # noqa: E402
from recall import ADMIN, query  # noqa: E402


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if parent == pid:
                out.append(int(entry))
    return out


async def trial(label: str, root: Path, work: Path) -> None:
    state = json.loads((work / "million.json").read_text())
    _, key, _ = state["agents"][0]
    others = [main for _, _, main in state["agents"][1:]]
    with private_redis(workdir=work / "redis") as url:
        port = free_port()
        env = {**os.environ, "REDIS_URL": url, "API_KEY": ADMIN, "OPENBLAS_NUM_THREADS": "1",
               "ZHIYI_LOG_LEVEL": "warning", "ZHIYI_RATE_LIMITS": "off", "ZHIYI_NO_REACTIONS": "1",
               "ZHIYI_CONFLICT_CHECK": "0"}
        proc = subprocess.Popen([sys.executable, "-m", "gateway.cli.main", "up", "--data-dir", str(work / "data"),
                                 "--port", str(port)], cwd=root, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_healthy(port, proc, timeout_s=300)
            base, h, rng = f"http://127.0.0.1:{port}", {"X-API-Key": key}, random.Random(5)
            async with aiohttp.ClientSession() as s:
                await phases.serving_index_ready(s, base)
                for i in range(20):
                    await phases._recall(s, base, h, query(rng, -i - 1), {})
                own = [(await phases._recall(s, base, h, query(rng, i), {}))[0] for i in range(300)]
                every = [(await phases._recall(s, base, h, query(rng, 1000 + i), {"include_namespaces": others}))[0]
                         for i in range(150)]
            await asyncio.sleep(3)
            kids = [round(rss_mb(c)) for c in children(proc.pid)]
            print(f"{label}: gateway RSS {rss_mb(proc.pid):,.0f} MB, children {kids} MB; own scope c=1 p50 "
                  f"{percentile(own, 50):.2f} ms, p99 {percentile(own, 99):.2f} ms; every memory p50 "
                  f"{percentile(every, 50):.2f} ms   load {os.getloadavg()[0]:.2f}", flush=True)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)


async def main(args: argparse.Namespace) -> None:
    plan = [("A", Path(args.root_a).resolve(), Path(args.work_a).resolve()),
            ("B", Path(args.root_b).resolve(), Path(args.work_b or args.work_a).resolve())]
    for r in range(args.rounds):
        for label, root, work in plan if r % 2 == 0 else plan[::-1]:
            await trial(label, root, work)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--work-a", required=True, help="a million.py work dir for gateway A")
    p.add_argument("--work-b", help="one for gateway B (default: --work-a)")
    p.add_argument("--root-a", required=True, help="checkout A")
    p.add_argument("--root-b", default=str(ROOT), help="checkout B (this one by default)")
    p.add_argument("--rounds", type=int, default=2)
    asyncio.run(main(p.parse_args()))
