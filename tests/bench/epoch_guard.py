"""What the log_reset guard (gateway/http/epoch_guard.py: one Redis GET, begun after the request
arrived and shared by concurrent requests, before authentication) costs a recall: the real app in
process over a private Redis, its projectors in a `zhiyi project` child as `zhiyi up` runs them,
alternating windows with the guard's check on and replaced by a no-op, at concurrency 1 (latency)
and 16 (throughput); and the check's own time.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/epoch_guard.py [--memories 300] [--windows 4]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import ROOT, percentile, private_redis  # noqa: E402  (puts the repository on sys.path)

from aiohttp.test_utils import TestClient, TestServer

from gateway.http.app import create_app
from gateway.http.appkeys import EPOCH_GUARD
from gateway.process.settings import Settings
from projections.models.cached_embedder import CachedEmbedder
from projections.models.use_embedder import LocalUSEEmbedder

ADMIN = "bench-admin"
WORDS = "tea deploy window staging database backup billing invoice schedule release cache index".split()


async def _noop() -> None:
    return None


async def _recall(client: TestClient, key: str, i: int) -> float:
    t = time.perf_counter()
    resp = await client.post("/api/v1/recall", json={"query": f"{WORDS[i % len(WORDS)]} {i % 7}", "cache": False},
                             headers={"X-API-Key": key})
    assert resp.status == 200, await resp.text()
    await resp.read()
    return (time.perf_counter() - t) * 1000


async def _window(client: TestClient, key: str, concurrency: int, seconds: float) -> tuple[list[float], float]:
    ms: list[float] = []
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()

    async def worker(w: int) -> None:
        i = w
        while time.perf_counter() < deadline:
            ms.append(await _recall(client, key, i))
            i += concurrency

    await asyncio.gather(*(worker(w) for w in range(concurrency)))
    return ms, len(ms) / (time.perf_counter() - started)


async def main(args: argparse.Namespace) -> None:
    embedder = CachedEmbedder(LocalUSEEmbedder(threads=1), None)
    embedder.embed(["warm up"])
    with private_redis(aof=False) as url, tempfile.TemporaryDirectory() as tmp:
        settings = dataclasses.replace(
            Settings(redis_url=url, data_dir=Path(tmp) / "data", api_key=ADMIN, instance_id="bench"),
            query_embedding_process=False, run_projectors=False, run_reactions=False, run_scheduler=False)
        child = subprocess.Popen([sys.executable, "-m", "gateway.cli.main", "project", "--data-dir", str(settings.data_dir),
                                  "--redis-url", url], cwd=ROOT, env=dict(os.environ, ZHIYI_LOG_LEVEL="warning"),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = TestClient(TestServer(create_app(settings, embedder=embedder)))
        print(f"rate limits: {'on' if settings.rate_limits is not None else 'off'} (a Settings built in code)",
              flush=True)
        await client.start_server()
        try:
            resp = await client.post("/api/v1/agents/register", json={"agent_id": "bench"},
                                     headers={"X-API-Key": ADMIN})
            key = (await resp.json())["api_key"]
            for i in range(args.memories):
                resp = await client.post("/api/v1/commit", headers={"X-API-Key": key},
                                         json={"content": f"{WORDS[i % len(WORDS)]} note {i} about "
                                                          f"{WORDS[(i * 7) % len(WORDS)]}"})
                assert resp.status == 201
                last = (await resp.json())["position"]
            for _ in range(24):  # until the child (loading its model first) has projected every commit
                resp = await client.post("/api/v1/recall", json={"query": "tea", "after": last},
                                         headers={"X-API-Key": key})
                if resp.status == 200:
                    break
            assert resp.status == 200, await resp.text()
            guard = client.app[EPOCH_GUARD]
            plain = guard.check
            spent: dict[int, list[float]] = {1: [], 16: []}
            conc = 1

            async def check() -> None:
                t = time.perf_counter()
                try:
                    await plain()
                finally:
                    spent[conc].append((time.perf_counter() - t) * 1000)

            results: dict[tuple[str, int], list] = {}
            for w in range(args.windows):
                for label in (("on", "off") if w % 2 == 0 else ("off", "on")):
                    guard.check = check if label == "on" else _noop
                    for conc in (1, 16):
                        ms, rate = await _window(client, key, conc, args.seconds)
                        results.setdefault((label, conc), []).append((ms, rate))
            for conc in (1, 16):
                for label in ("off", "on"):
                    runs = results[(label, conc)]
                    ms = [m for r in runs for m in r[0]]
                    rate = sum(r[1] for r in runs) / len(runs)
                    print(f"guard {label:>3} c={conc:<2}: {rate:7.1f} recalls/s  p50 {percentile(ms, 50):6.2f} ms  "
                          f"p99 {percentile(ms, 99):6.2f} ms")
            for conc, times in spent.items():
                print(f"the check itself, c={conc:<2}: p50 {percentile(times, 50):.3f} ms, "
                      f"p99 {percentile(times, 99):.3f} ms")
        finally:
            await client.close()
            child.send_signal(signal.SIGTERM)
            child.wait(timeout=30)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--windows", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=4.0)
    asyncio.run(main(parser.parse_args()))
