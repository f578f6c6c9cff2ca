"""The recall benchmark's c=1 / c=16 part (tests/bench/recall.py, cache off) over a data dir kept
between runs: the first run ingests N memories with the real model into `--dir` (Redis AOF and the
zhiyi data dir both live there), later runs reuse it, so a change to the recall path is measured on
the very same data in a minute instead of an ingest each time.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/recall_reuse.py --dir /tmp/zr/20k --n 20000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import aiohttp

from _harness import private_redis, zhiyi_process  # noqa: E402
from recall import ADMIN, ingest, latency, query, throughput  # noqa: E402


async def main(args) -> None:
    root = Path(args.dir)
    marker = root / "ingested.json"
    rng = random.Random(7)
    with private_redis(workdir=root / "redis") as redis_url:
        with zhiyi_process("up", redis_url, root / "data", ADMIN, {"ZHIYI_NO_REACTIONS": "1"}) as base:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as s:
                if marker.exists():
                    key = json.loads(marker.read_text())["key"]
                    rng.random()  # the same query stream as a fresh run is not needed, only distinct queries
                else:
                    async with s.post(f"{base}/api/v1/agents/register", json={"agent_id": "bench"},
                                      headers={"X-API-Key": ADMIN}) as r:
                        key = (await r.json())["api_key"]
                    await ingest(s, base, key, args.n, rng)
                    marker.write_text(json.dumps({"key": key, "n": args.n}))
                h = {"X-API-Key": key}
                # wait for the serving index (a recall that answers from it is fast)
                await latency(s, base, h, [query(rng, -i) for i in range(30)], False, "warm-up")
                qrng = random.Random(11)
                await latency(s, base, h, [query(qrng, i) for i in range(args.queries)], False, "cache off")
                for r in range(args.repeat):  # fresh queries each round (the gateway keeps an LRU of query vectors)
                    many = [query(qrng, 10 ** 5 + r * 20_000 + i) for i in range(20_000)]
                    spy = _py_spy(args.profile, r, args.duration) if args.profile else None
                    await throughput(s, base, h, many, False, "cache off", args.concurrency, args.duration)
                    if spy is not None:
                        spy.wait()


def _py_spy(prefix: str, round_: int, duration: float) -> subprocess.Popen:
    """py-spy on the gateway (`zhiyi up`) for the throughput run: a flame graph, or raw with --gil etc."""
    pid = next(p for p in os.listdir("/proc") if p.isdigit() and _is_gateway(p))
    spy = os.environ.get("PY_SPY") or Path(sys.executable).parent / "py-spy"
    return subprocess.Popen([str(spy), "record", "-o", f"{prefix}-{round_}.txt", "--format", "raw", "--pid", pid,
                             "--duration", str(int(duration)), "--nonblocking"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _is_gateway(pid: str) -> bool:
    try:
        return b"gateway.cli.main\0up" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--profile", default="", help="py-spy the gateway during each c=16 round into PREFIX-<round>.txt")
    asyncio.run(main(p.parse_args()))
