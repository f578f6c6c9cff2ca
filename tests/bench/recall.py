"""Recall benchmark over HTTP at N memories (default 100k): latency at concurrency 1 and
throughput at concurrency 16, with the search cache off and on, plus the ANN index's recall@10
against exhaustive search on the same data (the serving index's IVF, and LanceDB's index that
recall falls back on while the serving index loads).

Runs `zhiyi up` (gateway + projectors) against a private Redis, commits N varied memories through
/batch-commit, waits for the projection and for the vector index to cover the table, then times
recalls with distinct queries (cache off) and with a repeating query mix (cache on). The reaction
policies are off (`ZHIYI_NO_REACTIONS=1`) unless `--reactions`: they would still be validating the
bulk commits while recalls are timed.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/recall.py [--n 100000] [--queries 300]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

import aiohttp
import numpy as np

from _harness import CpuMeter, disk_usage, percentile, private_redis, rss_by_process, zhiyi_process  # noqa: E402

ADMIN = "bench-admin-key"
SUBJECTS = ["the staging database", "nginx", "the GPU server", "ComfyUI", "the backup job", "Redis", "the user",
            "部署脚本", "主力机", "用户", "知识图谱", "向量索引", "the billing service", "the CI pipeline"]
VERBS = ["runs on", "listens on", "prefers", "depends on", "was moved to", "uses", "需要", "依赖", "运行在", "偏好"]
OBJECTS = ["port 8080", "PostgreSQL 15", "short answers", "an RTX 3050", "3:00 every night", "AOF everysec",
           "端口 8189", "结论先行", "Deepin 25", "LanceDB", "the payments team", "16 GB of memory", "systemd timers"]


def sentence(rng: random.Random, i: int) -> str:
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} (record {i}, {rng.choice(OBJECTS)})"


def query(rng: random.Random, i: int) -> str:
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} q{i}"


async def ingest(s: aiohttp.ClientSession, base: str, key: str, n: int, rng: random.Random) -> None:
    h = {"X-API-Key": key}
    t = time.perf_counter()
    last = None
    for b in range(0, n, 1000):
        entries = [{"content": sentence(rng, i), **({"namespace": "shared"} if i % 3 == 0 else {})}
                   for i in range(b, min(n, b + 1000))]
        async with s.post(f"{base}/api/v1/batch-commit", json={"entries": entries}, headers=h) as r:
            assert r.status == 201, await r.text()
            last = (await r.json())["position"]
    while True:  # read-your-writes with a long poll loop
        async with s.post(f"{base}/api/v1/recall", json={"query": "warm", "after": last, "cache": False},
                          headers=h) as r:
            if r.status == 200:
                break
    print(f"committed and projected {n:,} memories in {time.perf_counter() - t:.1f} s")


async def bench_key(s: aiohttp.ClientSession, base: str, n: int, rng: random.Random, settle_s: float,
                    marker: Path | None = None) -> str:
    """The `bench` agent's key with `n` memories ingested: read from `marker` when an earlier run kept it,
    else registered, ingested, left `settle_s` for maintenance, and (with a `marker`) kept there."""
    if marker is not None and marker.exists():
        return marker.read_text().strip()
    async with s.post(f"{base}/api/v1/agents/register", json={"agent_id": "bench"},
                      headers={"X-API-Key": ADMIN}) as r:
        key = (await r.json())["api_key"]
    await ingest(s, base, key, n, rng)
    if settle_s:
        print(f"waiting {settle_s:.0f} s for maintenance (compaction + index refresh)")
        await asyncio.sleep(settle_s)
    if marker is not None:
        marker.write_text(key)
    return key


async def one(s: aiohttp.ClientSession, base: str, h: dict, q: str, cache: bool) -> tuple[float, float, bool]:
    t = time.perf_counter()
    async with s.post(f"{base}/api/v1/recall", json={"query": q, "top_k": 10, "cache": cache}, headers=h) as r:
        assert r.status == 200, await r.text()
        body = await r.json()
    assert body["results"]
    return (time.perf_counter() - t) * 1000, body["took_ms"], body["cached"]


async def latency(s, base, h, queries: list[str], cache: bool, label: str) -> None:
    lat, took, hits = [], [], 0
    for q in queries:
        ms, server_ms, cached = await one(s, base, h, q, cache)
        lat.append(ms)
        took.append(server_ms)
        hits += cached
    print(f"{label}: c=1, {len(lat)} queries: p50 {percentile(lat, 50):.2f} ms, p99 {percentile(lat, 99):.2f} ms "
          f"(server took_ms p50 {percentile(took, 50):.2f}); cache hits {hits}")


async def closed_loop(s, base, h, queries: list[str], cache: bool, concurrency: int,
                      duration: float) -> tuple[list[float], float]:
    """`concurrency` clients recalling the queries in turn (each once before any repeats) for
    `duration` seconds: (each recall's ms, the seconds they took)."""
    lat: list[float] = []
    deadline = time.perf_counter() + duration
    counter = iter(range(10 ** 9))

    async def worker() -> None:
        while time.perf_counter() < deadline:
            ms, _, _ = await one(s, base, h, queries[next(counter) % len(queries)], cache)
            lat.append(ms)

    t = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return lat, time.perf_counter() - t


async def throughput(s, base, h, queries: list[str], cache: bool, label: str, concurrency: int,
                     duration: float) -> None:
    cpu = CpuMeter()
    lat, elapsed = await closed_loop(s, base, h, queries, cache, concurrency, duration)
    done = len(lat)
    print(f"{label}: c={concurrency}, {elapsed:.1f} s: {done / elapsed:,.0f} recalls/s "
          f"(p50 {percentile(lat, 50):.1f} ms, p99 {percentile(lat, 99):.1f} ms)")
    if meter := cpu.report(done):
        print(f"  {meter}")


def ann_recall(data_dir: Path, n_queries: int, rng: random.Random) -> None:
    """recall@10 of the indexed (ANN) search against exhaustive search, same prefilter."""
    import lancedb

    from projections.models.use_embedder import LocalUSEEmbedder
    from projections.memories.reader import _search_filter

    table = lancedb.connect(str(data_dir / "projections" / "memories")).open_table("memories")
    indices = [ix.index_type for ix in table.list_indices() if list(ix.columns) == ["vector"]]
    stats = [table.index_stats(ix.name) for ix in table.list_indices() if list(ix.columns) == ["vector"]]
    unindexed = stats[0].num_unindexed_rows if stats else table.count_rows()
    embedder = LocalUSEEmbedder(threads=1)
    where = _search_filter(["bench-main", "bench-ephemeral", "shared"])
    ratios = []
    for i in range(n_queries):
        vec = embedder.embed([query(rng, 10 ** 6 + i)])[0]
        base = table.search(vec).distance_type("cosine").where(where, prefilter=True).limit(10)
        ann = {r["id"] for r in base.select(["id", "_distance"]).to_list()}
        exact = {r["id"] for r in table.search(vec).distance_type("cosine").where(where, prefilter=True)
                 .bypass_vector_index().select(["id", "_distance"]).limit(10).to_list()}
        ratios.append(len(ann & exact) / max(1, len(exact)))
    print(f"vector index {indices or 'none'} ({unindexed:,} rows unindexed): ANN recall@10 vs exhaustive "
          f"{np.mean(ratios):.3f} over {n_queries} queries (target >= 0.95)")


async def serving_ann_recall(data_dir: Path, n_queries: int, rng: random.Random) -> None:
    """recall@10 of the serving index's dense search (IVF where partitioned) against exact search."""
    import lancedb

    from projections.models.use_embedder import LocalUSEEmbedder
    from projections.serving.index import ServingIndex

    index = ServingIndex(data_dir / "projections" / "memories")
    t = time.perf_counter()
    await index.wait_ready(600)
    load_s = time.perf_counter() - t
    parts = [p for p in index._state.parts.values()]
    ivf_parts = [p.namespace for p in parts if p.ivf is not None]
    embedder = LocalUSEEmbedder(threads=1)
    namespaces = [p.namespace for p in parts]
    # the reference: an exact float32 scan (numpy) of the projection's own vectors (the index holds int8)
    table = lancedb.connect(str(data_dir / "projections" / "memories")).open_table("memories")
    live = table.search().where("is_deleted = false").select(["id", "vector"]).limit(None).to_arrow()
    live_ids = live.column("id").to_pylist()
    full = live.column("vector").combine_chunks().values.to_numpy(zero_copy_only=False).reshape(len(live_ids), -1)
    ratios, ann_ms, exact_ms = [], [], []
    for i in range(n_queries):
        vec = np.asarray(embedder.embed([query(rng, 10 ** 6 + i)])[0], dtype=np.float32)
        t = time.perf_counter()
        ann = {m for m, _ in await index.adense(vec, namespaces, 10)}
        ann_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        scores = full @ vec
        exact = [(live_ids[j], float(scores[j])) for j in np.argpartition(-scores, 9)[:10]]
        exact_ms.append((time.perf_counter() - t) * 1000)
        ratios.append(len(ann & {m for m, _ in exact}) / max(1, len(exact)))
    print(f"serving index: loaded {index.stats()['rows']:,} rows in {load_s:.1f} s; IVF in {ivf_parts}; "
          f"dense recall@10 vs exact {np.mean(ratios):.3f} over {n_queries} queries (target >= 0.95); "
          f"dense search p50 {percentile(ann_ms, 50):.2f} ms vs exact {percentile(exact_ms, 50):.2f} ms")
    await index.close()


async def main(args) -> None:
    rng = random.Random(7)
    with private_redis() as redis_url, tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        # The reaction policies (PassiveValidator: one recall per commit) would still be working through
        # the 100k bulk commits while the recalls are timed; this measures the recall path alone.
        env = {} if args.reactions else {"ZHIYI_NO_REACTIONS": "1"}
        with zhiyi_process("up", redis_url, data_dir, ADMIN, env) as base:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as s:
                key = await bench_key(s, base, args.n, rng, args.settle)
                h = {"X-API-Key": key}
                warm = [query(rng, -i) for i in range(30)]
                await latency(s, base, h, warm, False, "warm-up")
                distinct = [query(rng, i) for i in range(args.queries)]
                await latency(s, base, h, distinct, False, "cache off")
                many = [query(rng, 10 ** 5 + i) for i in range(20_000)]
                await throughput(s, base, h, many, False, "cache off", args.concurrency, args.duration)
                mix = [query(rng, 2 * 10 ** 5 + i) for i in range(50)]  # a small working set, asked again and again
                await latency(s, base, h, mix, True, "cache on (first pass fills it)")
                await latency(s, base, h, mix * 4, True, "cache on (repeats)")
                await throughput(s, base, h, mix, True, "cache on", args.concurrency, args.duration)
                rss = rss_by_process()
                print("RSS by process at the end: " + ", ".join(
                    f"{label} {size / 2**20:,.0f} MB ({size / args.n:,.0f} B per memory)"
                    for label, size in sorted(rss.items()) if label != "bench client"))
        used = disk_usage(data_dir, depth=3)
        print(f"disk: data dir {used[0][1] / 2**20:,.0f} MB = {used[0][1] / args.n:,.0f} B per memory; "
              "biggest: " + ", ".join(f"{k} {v / 2**20:,.0f} MB" for k, v in used[1:9]))
        await serving_ann_recall(data_dir, args.ann_queries, rng)
        ann_recall(data_dir, args.ann_queries, rng)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--reactions", action="store_true", help="run the reaction policies too (off by default)")
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--ann-queries", type=int, default=100)
    p.add_argument("--settle", type=float, default=70.0, help="seconds to let the periodic maintain run")
    asyncio.run(main(p.parse_args()))
