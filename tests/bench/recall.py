"""Recall benchmark: p50/p99 latency over HTTP at N memories (default 10k), concurrency 1.

Runs `zhiyi up` (gateway + projectors) against a private Redis, commits N varied memories through
/batch-commit, waits for the projection, then times recalls with distinct queries (no cache).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/recall.py [--n 10000] [--queries 500]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

import aiohttp

from _harness import percentile, private_redis, zhiyi_process  # noqa: E402

ADMIN = "bench-admin-key"
SUBJECTS = ["the staging database", "nginx", "the GPU server", "ComfyUI", "the backup job", "Redis", "the user",
            "部署脚本", "主力机", "用户", "知识图谱", "向量索引", "the billing service", "the CI pipeline"]
VERBS = ["runs on", "listens on", "prefers", "depends on", "was moved to", "uses", "需要", "依赖", "运行在", "偏好"]
OBJECTS = ["port 8080", "PostgreSQL 15", "short answers", "an RTX 3050", "3:00 every night", "AOF everysec",
           "端口 8189", "结论先行", "Deepin 25", "LanceDB", "the payments team", "16 GB of memory", "systemd timers"]


def sentence(rng: random.Random, i: int) -> str:
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} (record {i}, {rng.choice(OBJECTS)})"


async def main(args) -> None:
    rng = random.Random(7)
    with private_redis() as redis_url, tempfile.TemporaryDirectory() as tmp, \
            zhiyi_process("up", redis_url, Path(tmp) / "data", ADMIN) as base:
        async with aiohttp.ClientSession() as s:
            async with s.post(f"{base}/api/v1/agents/register", json={"agent_id": "bench"},
                              headers={"X-API-Key": ADMIN}) as r:
                key = (await r.json())["api_key"]
            h = {"X-API-Key": key}
            t = time.perf_counter()
            last = None
            for b in range(0, args.n, 1000):
                entries = [{"content": sentence(rng, i), "namespace": "shared" if i % 3 == 0 else None}
                           for i in range(b, min(args.n, b + 1000))]
                entries = [{k: v for k, v in e.items() if v is not None} for e in entries]
                async with s.post(f"{base}/api/v1/batch-commit", json={"entries": entries}, headers=h) as r:
                    assert r.status == 201, await r.text()
                    last = (await r.json())["position"]
            # wait for the projection (read-your-writes with a long poll loop)
            while True:
                async with s.post(f"{base}/api/v1/recall", json={"query": "warm", "after": last}, headers=h) as r:
                    if r.status == 200:
                        break
            print(f"committed and projected {args.n} memories in {time.perf_counter() - t:.1f} s")
            queries = [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} q{i}"
                       for i in range(args.queries + 50)]
            lat, took = [], []
            for i, q in enumerate(queries):
                t = time.perf_counter()
                async with s.post(f"{base}/api/v1/recall", json={"query": q, "top_k": 10}, headers=h) as r:
                    assert r.status == 200
                    body = await r.json()
                    assert body["results"]
                if i >= 50:  # skip warm-up
                    lat.append((time.perf_counter() - t) * 1000)
                    took.append(body["took_ms"])
    print(f"recall over HTTP at {args.n} memories, concurrency 1, {len(lat)} queries: "
          f"p50 {percentile(lat, 50):.2f} ms, p99 {percentile(lat, 99):.2f} ms   (target p50 <= 20 ms); "
          f"server-side took_ms p50 {percentile(took, 50):.2f}, p99 {percentile(took, 99):.2f}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--queries", type=int, default=500)
    asyncio.run(main(p.parse_args()))
