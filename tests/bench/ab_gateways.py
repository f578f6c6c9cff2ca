"""Paired A/B of two gateway configurations on a noisy machine: one private Redis, one data dir,
one `zhiyi project` process, and two `zhiyi serve` gateways that differ only in their environment
(JSON objects A and B; both run with ZHIYI_RATE_LIMITS=off, each with its own ZHIYI_INSTANCE_ID). After
N memories are committed, c=16 throughput windows alternate A B B A A B ... so slow drifts of the
machine hit both alike; compare the per-window figures.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/ab_gateways.py --n 30000 \
        --a '{}' --b '{"ZHIYI_SOME_SWITCH": "1"}' [--rounds 4] [--window 8]

`--keep DIR` ingests once into DIR (Redis AOF and data dir) and reuses it on later runs, so a
100k comparison does not pay the ingest each time.

Two versions of the code: `--root-a DIR` runs gateway A from another checkout (say
`git worktree add /tmp/base HEAD`); the projector process always runs this checkout's code.
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
import tempfile
from pathlib import Path

import aiohttp

from _harness import ROOT, free_port, private_redis, wait_healthy  # noqa: E402
from recall import ADMIN, bench_key, latency, query, throughput  # noqa: E402


def start(command: str, redis_url: str, data_dir: Path, env_extra: dict, port: int | None = None,
          root: Path = ROOT) -> subprocess.Popen:
    env = dict(os.environ, REDIS_URL=redis_url, API_KEY=ADMIN, OPENBLAS_NUM_THREADS="1", ZHIYI_LOG_LEVEL="warning",
               ZHIYI_NO_REACTIONS="1", ZHIYI_RATE_LIMITS="off", **env_extra)
    argv = [sys.executable, "-m", "gateway.cli.main", command, "--data-dir", str(data_dir)]
    if port:
        argv += ["--port", str(port)]
    return subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def main(args) -> None:
    rng = random.Random(7)
    keep = Path(args.keep).resolve() if args.keep else None
    with private_redis(workdir=keep / "redis" if keep else None) as url, tempfile.TemporaryDirectory() as tmp:
        data = keep / "data" if keep else Path(tmp) / "data"
        procs = [start("project", url, data, {})]
        ports = {"A": free_port(), "B": free_port()}
        # two live gateways on one data dir: each its own instance id (the data dir's is claimed by one)
        procs += [start("serve", url, data, {"ZHIYI_INSTANCE_ID": f"ab-gateway-{k.lower()}", **json.loads(env)},
                        ports[k], Path(root).resolve())
                  for k, env, root in (("A", args.a, args.root_a), ("B", args.b, args.root_b))]
        try:
            for port in ports.values():
                wait_healthy(port)
            base = {k: f"http://127.0.0.1:{p}" for k, p in ports.items()}
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as s:
                key = await bench_key(s, base["A"], args.n, rng, args.settle, keep / "ingested" if keep else None)
                h = {"X-API-Key": key}
                for k in ("A", "B"):  # loads each one's serving index and model
                    await latency(s, base[k], h, [query(rng, -i) for i in range(40)], False, f"warm-up {k}")
                many = [query(rng, 10 ** 5 + i) for i in range(20_000)]
                for r_ in range(args.rounds):
                    for k in ("A", "B") if r_ % 2 == 0 else ("B", "A"):
                        await throughput(s, base[k], h, many[r_ * 2000:], False, f"{k} window {r_}", 16, args.window)
                for r_ in range(args.latency_rounds):   # c=1 in turns too: A B, B A, ...
                    for k in ("A", "B") if r_ % 2 == 0 else ("B", "A"):
                        await latency(s, base[k], h, [query(rng, 3 * 10 ** 5 + r_ * 1000 + i) for i in range(150)],
                                      False, f"{k} c=1 round {r_}")
        finally:
            for p in procs:
                p.send_signal(signal.SIGTERM)
            for p in procs:
                p.wait(timeout=30)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=30_000)
    p.add_argument("--a", default="{}", help="environment of gateway A (JSON object)")
    p.add_argument("--b", default="{}", help="environment of gateway B (JSON object)")
    p.add_argument("--root-a", default=str(ROOT), help="checkout gateway A runs from")
    p.add_argument("--root-b", default=str(ROOT), help="checkout gateway B runs from")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--window", type=float, default=8.0, help="seconds per throughput window")
    p.add_argument("--latency-rounds", type=int, default=1, help="c=1 rounds of 150 distinct queries each, in turns")
    p.add_argument("--settle", type=float, default=25.0)
    p.add_argument("--keep", help="directory for the Redis and the data dir, kept: the first run ingests "
                                  "--n memories there, later runs reuse them (and the recall counts they left)")
    asyncio.run(main(p.parse_args()))
