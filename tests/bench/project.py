"""Benchmark the memories projection (a script, not a pytest test).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/project.py [--n 5000] [--small 300]

Starts its own redis-server on a free port in a temp dir, appends N `memory.committed` events
(varied English and Chinese sentences, one per memory) through EventStore, then measures:

  (a) memories/s projected from a cold log with the default USE model and an empty embedding cache
  (b) events/s of a replay (rebuild into a fresh dir) with the warm embedding cache
  (c) live-style single-event batches: ms per apply and read latency, before/after maintain()
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import structlog  # noqa: E402
from _harness import private_redis  # noqa: E402

from events.catalogue import MemoryCommitted, new_event  # noqa: E402
from events.redis.client import connect  # noqa: E402
from events.redis.store import EventStore  # noqa: E402
from projections.models.embedding import make_embedder  # noqa: E402
from projections.memories.projector import MemoriesProjector  # noqa: E402
from projections.memories.reader import MemoriesReader  # noqa: E402
from projections.core.registry import projection_dir  # noqa: E402
from projections.core.replay import rebuild  # noqa: E402
from projections.core.runner import ProjectionRunner  # noqa: E402
from projections.core.waiter import CheckpointWaiter  # noqa: E402

EN_WHO = ["The user", "Alice", "The ops team", "Our client in Berlin", "The data team", "Bob from finance",
          "The on-call engineer", "The product owner", "The mobile team", "The security lead"]
EN_WHAT = ["prefers dark mode in every editor", "wants deployment summaries every Friday at 5 pm",
           "requires database migrations to run before the workers restart",
           "decided to move the staging cluster to eu-west-1", "uses pnpm instead of npm for the web app",
           "asked that invoices be exported as CSV with semicolons",
           "keeps API keys in the vault, never in environment files",
           "found that the nightly backup fails when the disk is above 90% full",
           "agreed to freeze merges to main during the release week",
           "reported that search results are slow for queries longer than 200 characters"]
EN_WHY = ["after the outage in March", "because the old setup kept timing out", "to stay within the budget",
          "as agreed in the weekly sync", "since the audit last quarter", "for the Q3 launch",
          "to reduce on-call pages", "because customers complained", "until the migration is finished",
          "per the new compliance rules"]
ZH_WHO = ["用户", "牧尘", "运维团队", "产品经理", "数据组", "前端小组", "财务部的小王", "安全负责人", "测试同学", "客户成功团队"]
ZH_WHAT = ["更喜欢在所有编辑器里使用深色主题", "希望每周五下午五点收到部署总结", "要求在重启服务前先执行数据库迁移",
           "决定把预发布集群迁移到华东区域", "习惯用飞书文档记录会议纪要", "要求发票导出为带分号的CSV文件",
           "规定密钥只能保存在保险库中", "发现磁盘使用率超过百分之九十时夜间备份会失败",
           "同意发布周期间冻结主干合并", "反馈超过两百字的查询搜索很慢"]
ZH_WHY = ["因为三月份出过一次故障", "因为旧方案经常超时", "为了控制预算", "这是周会上达成的共识", "自从上季度审计之后",
          "为了第三季度的上线", "为了减少夜间告警", "因为客户多次投诉", "直到迁移完成为止", "按照新的合规要求"]


def sentences(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        if rng.random() < 0.5:
            s = f"{rng.choice(EN_WHO)} {rng.choice(EN_WHAT)} {rng.choice(EN_WHY)}"
        else:
            s = f"{rng.choice(ZH_WHO)}{rng.choice(ZH_WHAT)}，{rng.choice(ZH_WHY)}"
        if s in seen:  # 2000 combinations: tag repeats with a ticket number to keep contents distinct
            s = f"{s} (ticket {len(out)})" if s.isascii() else f"{s}（工单{len(out)}）"
        seen.add(s)
        out.append(s + ("." if s.isascii() else "。"))
    return out


async def append_all(store: EventStore, texts: list[str]) -> None:
    namespaces = ["shared", "alice-main", "bob-main", "hermes-main"]
    for start in range(0, len(texts), 500):
        chunk = texts[start:start + 500]
        await store.append([
            new_event(MemoryCommitted(f"mem-{start + i:07d}", t, namespaces[(start + i) % 4], "fact", "system_fact",
                                      tags=("bench",)), ns=namespaces[(start + i) % 4], agent="bench")
            for i, t in enumerate(chunk)])


async def bench(n: int, small: int, workdir: Path, url: str) -> None:
    redis = connect(url)
    store = EventStore(redis, origin="bench")
    texts = sentences(n)
    t0 = time.perf_counter()
    await append_all(store, texts)
    print(f"appended {n} memory.committed events in {time.perf_counter() - t0:.2f}s")

    cache = workdir / "embedding-cache.sqlite"
    embedder = make_embedder(bge_endpoint=None, bge_api_key=None, bge_model=None, cache_path=str(cache))
    t0 = time.perf_counter()
    await asyncio.to_thread(embedder.inner.embed, ["warm up the model"])  # load weights, bypass the cache
    print(f"USE model loaded in {time.perf_counter() - t0:.2f}s (not counted below)")

    live = projection_dir(workdir / "live", "memories")
    projector = MemoriesProjector(live, embedder)
    t0 = time.perf_counter()
    await ProjectionRunner(store, projector, publish=False).catch_up()
    cold = time.perf_counter() - t0
    print(f"(a) cold projection: {n} memories in {cold:.2f}s = {n / cold:,.0f} memories/s "
          f"(embedded {embedder.misses}, cache hits {embedder.hits})")

    embedder2 = make_embedder(bge_endpoint=None, bge_api_key=None, bge_model=None, cache_path=str(cache))
    t0 = time.perf_counter()
    result = await rebuild(store, workdir / "replay", embedder2)
    warm = time.perf_counter() - t0
    live_digest = await projector.digest()
    print(f"(b) warm replay: rebuild of {n} events in {warm:.2f}s = {n / warm:,.0f} events/s including "
          f"maintain + digest (embedded {embedder2.misses}, cache hits {embedder2.hits}); "
          f"digest equal to live: {result['memories'].digest == live_digest}")
    fold_only = MemoriesProjector(projection_dir(workdir / "replay2", "memories"), embedder2, compact_after_rows=0,
                                  vector_index_min_rows=0, serving_indexes=False)
    t0 = time.perf_counter()
    await ProjectionRunner(store, fold_only, publish=False, batch_size=500).catch_up()
    folded = time.perf_counter() - t0
    print(f"    fold only, batches of 500 as the live runner: {n / folded:,.0f} events/s")
    await fold_only.close()

    if small:
        await small_batches(store, projector, live, texts, small)
    await projector.close()
    embedder.close()
    embedder2.close()
    await redis.aclose()


async def small_batches(store: EventStore, projector: MemoriesProjector, live: Path, texts: list[str],
                        small: int) -> None:
    """Live traffic: one append at a time, each projected as its own batch by a tailing runner."""
    reader = MemoriesReader(live)
    probe = (await asyncio.to_thread(projector.embedder.embed, [texts[0]]))[0]

    def read_ms() -> tuple[float, float]:
        t = time.perf_counter()
        for _ in range(5):
            reader.get("mem-0000003")
        g = (time.perf_counter() - t) / 5 * 1000
        t = time.perf_counter()
        for _ in range(5):
            reader.search(probe, ["shared", "alice-main"], 10)
        return g, (time.perf_counter() - t) / 5 * 1000

    g0, s0 = read_ms()
    waiter = CheckpointWaiter(store)
    runner = ProjectionRunner(store, projector, notify=waiter.notify, block_ms=200)
    stop = asyncio.Event()
    task = asyncio.create_task(runner.run(stop))
    lat = []
    for i in range(small):
        ev = new_event(MemoryCommitted(f"live-{i:05d}", f"live memory number {i}: {texts[i % len(texts)]}",
                                       "shared", "fact", "system_fact"), ns="shared", agent="bench")
        t = time.perf_counter()
        res = await store.append([ev])
        if not await waiter.wait([projector.name], res.position, timeout_s=10):
            raise RuntimeError("projection lag > 10 s")
        lat.append((time.perf_counter() - t) * 1000)
    stop.set()
    await task
    g1, s1 = read_ms()
    t = time.perf_counter()
    await projector.maintain()
    opt = (time.perf_counter() - t) * 1000
    g2, s2 = read_ms()
    lat_sorted = sorted(lat)
    p50, p95 = lat_sorted[len(lat) // 2], lat_sorted[int(len(lat) * 0.95)]
    first, last = sum(lat[:20]) / 20, sum(lat[-20:]) / 20
    print(f"(c) {small} single-event batches (append -> projected, auto-compaction every "
          f"{projector.compact_after_writes} writes): p50 {p50:.1f} ms, p95 {p95:.1f} ms, max {max(lat):.0f} ms; "
          f"first 20 avg {first:.1f} ms, last 20 avg {last:.1f} ms")
    print(f"    reader get/search ms: before {g0:.1f}/{s0:.1f}, after the small batches {g1:.1f}/{s1:.1f}, "
          f"after maintain() ({opt:.0f} ms) {g2:.1f}/{s2:.1f}")
    reader.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5000, help="memories to append and project")
    ap.add_argument("--small", type=int, default=300, help="single-event batches for (c); 0 skips it")
    ap.add_argument("--verbose", action="store_true", help="show per-batch logs")
    args = ap.parse_args()
    if not args.verbose:
        import logging

        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    workdir = Path(tempfile.mkdtemp(prefix="zhiyi-bench-"))
    try:
        with private_redis(aof=False) as url:
            asyncio.run(bench(args.n, args.small, workdir, url))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

if __name__ == "__main__":
    main()
