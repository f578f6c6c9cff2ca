"""Disk bytes per memory, per component (issue 19, part 4; a script, not a pytest test).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/disk_usage.py [--memories 20000] [--chunk 100]
        [--dim 512] [--keep DIR]

Over a redis-server it starts (AOF everysec, its files in the data dir's `redis/`), --memories
`memory.committed` events of realistic size (about 300 bytes of text: English sentences of ~50 words,
Chinese ones of ~100 characters, 30% Chinese; 4 namespaces; tags, categories) are appended in chunks of
--chunk, and after each chunk every live projector (`make_projectors(data_dir, embedder)`, serving
indexes on: BTree, Bitmap, FTS, the HNSW vector index past 5,000 rows) catches up with its own
`ProjectionRunner` (batches as a live runner gets them), the embedder being the tests' deterministic
hash (HashEmbedder, 512-d by default) behind the data dir's persistent embedding cache. Then every
projector's `maintain()` runs, as the live runner does within a minute of the last write.

Printed: bytes per memory of each file group: the memories table's data files, each of its indexes
(vector, full text, btree, bitmap), its manifests (`_versions`), transactions, deletion files; the
other projections (each SQLite db / LanceDB table); the embedding cache; Redis's AOF. Then the same
after pruning every old LanceDB version (`optimize(cleanup_older_than=0)`), which is what the memories
projector's scheduled prune (`upkeep_due`) leaves one retention (10 min) after the last write: what the
versions kept by the retention window cost.

Measured (20,000 memories, 512-d, text 306 B/memory; B/memory as left by maintain -> after the prune):
  before (float32 vectors, blob-per-row cache):  13,892 -> 9,060; memories data 6,960 -> 2,976, vector
      index 1,066 -> 711, full text 509 -> 141, embedding cache 2,766, graph 1,467, Redis AOF 972
  after (float16 vectors in the table, flat-file cache): 10,927 -> 7,369; memories data 4,655 -> 1,949,
      vector index 1,066 -> 711, full text 511 -> 141, embedding cache 2,101 (2,048 vectors + 53 index),
      graph 1,467, Redis AOF 972
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
from datetime import timedelta
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import structlog  # noqa: E402
from _harness import private_redis  # noqa: E402

from events.catalogue import MemoryCommitted, new_event  # noqa: E402
from events.redis.client import connect  # noqa: E402
from events.redis.store import EventStore  # noqa: E402
from projections.core.registry import make_projectors, projections_root  # noqa: E402
from projections.core.runner import ProjectionRunner  # noqa: E402
from projections.models.cached_embedder import CachedEmbedder  # noqa: E402
from projections.models.embedding_cache import EmbeddingCache  # noqa: E402
from tests.hash_embedder import HashEmbedder  # noqa: E402

NAMESPACES = ["shared", "alice-main", "bob-main", "hermes-main"]
EN = ("the deploy backup disk invoice editor cluster release budget audit search port server kernel password "
      "meeting customer schedule report database migration on every before after prefers uses needs weekly "
      "staging production vim python redis tuesday friday alice bob hermes latency cache and with for team "
      "should always never config timeout retry region bucket").split()
ZH = ("部署 备份 磁盘 发票 集群 预算 服务器 数据库 迁移 会议 客户 报告 每周 周二 生产 测试 编辑器 密码 缓存 延迟 "
      "喜欢 使用 需要 之前 之后 的 团队 总是 从不 配置 超时 重试 区域 存储桶 上线 回滚 监控 告警").split()
CATEGORIES = [("fact", "system_fact"), ("preference", "user_pref"), ("decision", "proj_context"),
              ("pattern", "tool_usage"), ("constraint", "code_snippet")]


def text_of(rng: random.Random, i: int) -> str:
    """About 300 UTF-8 bytes: ~50 English words, or ~100 Chinese characters (3 bytes each)."""
    if rng.random() < 0.3:
        out = ""
        while len(out.encode()) < 290:
            out += "".join(rng.choices(ZH, k=rng.randint(4, 9))) + "，"
        return out.rstrip("，") + f"。（{i}）"
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < 290:
        words.append(rng.choice(EN))
    return " ".join(words) + f" #{i}."


def events_of(n: int, seed: int) -> list:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        ns = rng.choice(NAMESPACES)
        cat, decay = rng.choice(CATEGORIES)
        tags = tuple(rng.sample(["ops", "billing", "infra", "personal", "work"], rng.randint(0, 2)))
        out.append(new_event(MemoryCommitted(f"m{i:07d}", text_of(rng, i), ns, cat, decay, tags=tags,
                                             source="agent_inference"), ns=ns, agent=ns.split("-")[0]))
    return out


# ---------------------------------------------------------------------------------------------- sizes

def _lance_group(rel: Path, index_kinds: dict[str, str]) -> str:
    parts = rel.parts
    if parts[0] == "data":
        return "data files"
    if parts[0] == "_indices":
        return f"index: {index_kinds.get(parts[1], '?')}"
    if parts[0] == "_versions":
        return "_versions (manifests)"
    if parts[0] == "_transactions":
        return "_transactions"
    if parts[0] == "_deletions":
        return "_deletions"
    return parts[0]


def _index_kind(directory: Path) -> str:
    names = {p.name for p in directory.iterdir()}
    if "index.idx" in names:
        return "vector (hnsw_sq)"
    if any(n.startswith("bitmap") for n in names):
        return "bitmap"
    if any("page_lookup" in n or "page_data" in n for n in names):
        return "btree"
    if any(n.startswith(("tokens", "invert", "docs", "metadata")) or n.startswith("part_") for n in names):
        return "full text"
    return "other:" + ",".join(sorted(names))[:40]


def lance_groups(table_dir: Path) -> dict[str, int]:
    kinds: dict[str, str] = {}
    if (table_dir / "_indices").exists():
        kinds = {d.name: _index_kind(d) for d in (table_dir / "_indices").iterdir() if d.is_dir()}
    out: dict[str, int] = {}
    for path in table_dir.rglob("*"):
        if path.is_file():
            g = _lance_group(path.relative_to(table_dir), kinds)
            out[g] = out.get(g, 0) + path.stat().st_size
    return out


def tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else \
        (path.stat().st_size if path.exists() else 0)


def report(title: str, data_dir: Path, redis_dir: Path, n: int) -> int:
    rows: list[tuple[str, int]] = []
    proj = projections_root(data_dir)
    mem = proj / "memories" / "memories.lance"
    for g, size in sorted(lance_groups(mem).items(), key=lambda kv: -kv[1]):
        rows.append((f"memories.lance {g}", size))
    other = tree_bytes(proj / "memories") - tree_bytes(mem)
    rows.append(("memories (checkpoint, lock)", other))
    for d in sorted(p for p in proj.iterdir() if p.is_dir() and p.name != "memories"):
        rows.append((f"projection {d.name}", tree_bytes(d)))
    cache = data_dir / "cache"
    for f in sorted(cache.iterdir()) if cache.exists() else []:
        rows.append((f"cache/{f.name}", tree_bytes(f)))
    rest = tree_bytes(data_dir) - tree_bytes(proj) - tree_bytes(cache) - tree_bytes(redis_dir)
    if rest:
        rows.append(("data dir, other", rest))
    rows.append(("redis (AOF)", tree_bytes(redis_dir)))
    total = sum(s for _, s in rows)
    print(f"\n{title}: {n:,} memories, {total / 1e6:,.1f} MB = {total / n:,.0f} B/memory")
    print(f"  {'component':<48}{'MB':>9}{'B/memory':>10}")
    for name, size in rows:
        print(f"  {name:<48}{size / 1e6:>9.2f}{size / n:>10,.0f}")
    return total


# ---------------------------------------------------------------------------------------------- fold

async def bench(args: argparse.Namespace, data_dir: Path, redis_dir: Path, url: str) -> None:
    redis = connect(url)
    store = EventStore(redis, origin="bench")
    await store.open_epoch(create=True)
    epoch = await store.log_epoch()
    events = events_of(args.memories, args.seed)
    text_bytes = sum(len(e.data.content.encode()) for e in events)
    inner = HashEmbedder(args.dim)
    embedder = CachedEmbedder(inner, EmbeddingCache(data_dir / "cache" / "embeddings.sqlite"))
    projectors = make_projectors(data_dir, embedder)
    runners = [ProjectionRunner(store, p, epoch=epoch) for p in projectors]
    t0 = time.perf_counter()
    for at in range(0, len(events), args.chunk):
        await store.append(events[at:at + args.chunk])
        for r in runners:
            await r.catch_up()
        if (at // args.chunk) % 20 == 0:
            print(f"  {at + args.chunk:,} memories folded, {time.perf_counter() - t0:.0f} s", flush=True)
    for p in projectors:
        maintain = getattr(p, "maintain", None)
        if maintain is not None:
            await maintain()
    print(f"folded {len(events):,} memories in {time.perf_counter() - t0:.0f} s "
          f"(text {text_bytes / len(events):.0f} B/memory)", flush=True)
    if args.rewrite_aof:   # what Redis's own rewrite (auto-aof-rewrite-percentage) brings the AOF down to
        await redis.bgrewriteaof()
        await asyncio.sleep(0.5)
        while (await redis.info("persistence"))["aof_rewrite_in_progress"]:
            await asyncio.sleep(0.2)
    for p in projectors:
        await p.close()
    embedder.close()
    await asyncio.sleep(1.5)   # AOF everysec: let the last second reach the file
    before = report("as the live runner leaves it (after maintain)", data_dir, redis_dir, len(events))

    # what the versions kept by the retention window cost: prune them all
    pruned = make_projectors(data_dir, HashEmbedder(args.dim))
    for p in pruned:
        table = getattr(p, "_table", None)
        if table is not None and await table.exists():
            await (await table.open()).optimize(cleanup_older_than=timedelta(0))
        await p.close()
    after = report("after pruning every old LanceDB version (the scheduled prune, one retention later)",
                   data_dir, redis_dir, len(events))
    print(f"\nold versions: {(before - after) / len(events):,.0f} B/memory; text {text_bytes / len(events):.0f} "
          f"B/memory; target (issue 19): <= 5,120 B/memory plus text")
    await redis.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--chunk", type=int, default=100, help="events appended between catch-ups")
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--rewrite-aof", action="store_true", help="BGREWRITEAOF before measuring")
    parser.add_argument("--keep", default="", help="build the data dir here and keep it")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="zhiyi-bench-disk-"))
    data_dir, redis_dir = work / "data", work / "data" / "redis"
    try:
        with private_redis(workdir=redis_dir) as url:
            asyncio.run(bench(args, data_dir, redis_dir, url))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
