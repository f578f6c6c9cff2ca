"""Backup and restore at scale (a script, not a pytest test): export, log-load, restore with the
archived projections, and full-rebuild rates, each in events/s, measured separately.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/backup.py [--events 1000000] [--tail 10000]
        [--no-rebuild-restore]

Everything runs in this process over redis-servers it starts on free ports (AOF everysec, as the
embedded default), with the data dirs in a temp dir:

  1. generate: --events events appended through EventStore in batches of 1000, a mix like a busy
     deployment's log: per 20 events, 10 `memory.committed` (distinct English/Chinese sentences in 8
     namespaces), 6 `recall.served`, 3 `memory.feedback`, 1 `memory.deprecated`;
  2. the source's projections: a full rebuild (`projections.core.replay.rebuild`, all 9 projectors)
     into the source data dir, timed (rate 1);
  3. --tail more events (the projections do not have them: a live deployment's are a little behind);
  4. export: `zhiyi backup`'s writer with the log only (no data dir: rate 2), then with the copies of
     the projections (the full archive, restored below);
  5. restore with the archived projections into a fresh Redis and data dir (`gateway.backup.restore`):
     the log load (rate 3) and the projections (their copies put in place, the tail folded: rate 4,
     the restored events over those seconds);
  6. restore --rebuild of the same archive into another fresh Redis and data dir: the same log load and
     a full rebuild of every projection from it (rate 5); its digests must equal (5)'s.

The embedder is a deterministic hash (16 dimensions, tests/fixture_log.FixtureEmbedder, no model):
the rates are the log's and the projections' own, not a model's (tests/bench/project.py measures the
embedding model). Rate limits play no part (no HTTP); printed as off.
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
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import structlog  # noqa: E402
from _harness import private_redis  # noqa: E402

from events.catalogue import MemoryCommitted, MemoryDeprecated, MemoryFeedback, RecallServed, new_event  # noqa: E402
from events.redis.client import connect  # noqa: E402
from events.redis.store import EventStore  # noqa: E402
from gateway.backup.restore import restore  # noqa: E402
from gateway.backup.writer import backup  # noqa: E402
from gateway.process.settings import Settings  # noqa: E402
from projections.core.replay import rebuild  # noqa: E402
from projections.models.cached_embedder import CachedEmbedder  # noqa: E402
from tests.fixture_log import FixtureEmbedder  # noqa: E402

WHO = ["The user", "Alice", "The ops team", "Our client in Berlin", "The data team", "Bob from finance",
       "The on-call engineer", "The product owner", "用户", "运维团队", "产品经理", "数据组"]
WHAT = ["prefers dark mode in every editor", "wants deployment summaries every Friday",
        "moved the staging cluster to eu-west-1", "uses pnpm instead of npm", "更喜欢深色主题",
        "希望每周五收到部署总结", "决定把预发布集群迁移到华东区域", "要求发票导出为CSV文件"]
NAMESPACES = [f"agent{i}-main" for i in range(7)] + ["shared"]


def _events(start: int, n: int, rng: random.Random, committed: list[tuple[str, str]]) -> list:
    """`committed`: (memory_id, namespace) of the live memories so far (a deprecated one leaves it)."""
    out = []
    for i in range(start, start + n):
        slot = i % 20
        ns = NAMESPACES[i % len(NAMESPACES)]
        agent = ns.split("-")[0]
        if slot < 10 or len(committed) < 10:
            memory_id = f"mem-{i:09d}"
            committed.append((memory_id, ns))
            text = f"{rng.choice(WHO)} {rng.choice(WHAT)} (#{i})"
            out.append(new_event(MemoryCommitted(memory_id, text, ns, "fact", "system_fact", tags=("bench",)),
                                 ns=ns, agent=agent))
        elif slot < 16:
            hits = [rng.choice(committed[-5000:]) for _ in range(5)]
            out.append(new_event(RecallServed(f"what does {rng.choice(WHO)} want? {i}", tuple({h[1] for h in hits}),
                                              tuple(h[0] for h in hits), (0.9, 0.8, 0.7, 0.6, 0.5)),
                                 ns=ns, agent=agent))
        elif slot < 19:
            memory_id, mns = rng.choice(committed[-5000:])
            out.append(new_event(MemoryFeedback(memory_id, mns, rng.choice(["useful", "not_useful"])),
                                 ns=mns, agent=agent))
        else:
            memory_id, mns = committed.pop(rng.randrange(len(committed)))
            out.append(new_event(MemoryDeprecated(memory_id, mns, 2, "outdated"), ns=mns, agent=agent))
    return out


async def _generate(store: EventStore, start: int, n: int, rng: random.Random, committed: list[tuple[str, str]]) -> float:
    t0 = time.perf_counter()
    for at in range(start, start + n, 1000):
        await store.append(_events(at, min(1000, start + n - at), rng, committed))
    return time.perf_counter() - t0


def _rate(events: int, seconds: float) -> str:
    return f"{events / seconds:>10,.0f} events/s  ({events:,} events in {seconds:,.1f} s)"


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


async def bench(args: argparse.Namespace, work: Path, urls: list[str]) -> int:
    source_url, archived_url, rebuilt_url = urls
    embedder = CachedEmbedder(FixtureEmbedder(), None)
    redis = connect(source_url)
    store = EventStore(redis, origin="bench")
    await store.open_epoch(create=True)
    rng = random.Random(args.seed)
    committed: list[tuple[str, str]] = []
    print(f"rate limits: off (no HTTP); embedder: {FixtureEmbedder.model_id} (no model)", flush=True)

    seconds = await _generate(store, 0, args.events, rng, committed)
    print(f"generate   {_rate(args.events, seconds)}  (EventStore.append, batches of 1000)", flush=True)

    data = work / "source"
    t0 = time.perf_counter()
    digests = await rebuild(store, data, embedder)
    seconds = time.perf_counter() - t0
    print(f"1 full rebuild of the source's projections (9 projectors, from the log):\n"
          f"           {_rate(args.events, seconds)}; projections {_du(data / 'projections') / 2**20:,.0f} MiB",
          flush=True)

    await _generate(store, args.events, args.tail, rng, committed)
    total = args.events + args.tail
    t0 = time.perf_counter()
    log_only = await backup(redis, work / "backups-log-only", None, None, incremental=False)
    seconds = time.perf_counter() - t0
    print(f"2 export (the log only, {log_only['bytes'] / 2**20:,.0f} MiB):\n           {_rate(total, seconds)}",
          flush=True)
    t0 = time.perf_counter()
    full = await backup(redis, work / "backups", data, None, incremental=False)
    seconds = time.perf_counter() - t0
    print(f"  full archive with the projection copies ({full['bytes'] / 2**20:,.0f} MiB, "
          f"{full['projections']} projections): {seconds:,.1f} s", flush=True)
    await redis.aclose()

    settings = Settings(redis_url=archived_url, data_dir=work / "restored-archived", api_key="bench")
    got = await restore(settings, Path(full["path"]), force=False, embedder=embedder)
    assert got.projections_from_archive, got.why_rebuilt
    folded = max(d.events or 0 for d in got.digests.values())
    print(f"3 log load (verify the chunks, XADD, indexes):\n           {_rate(total, got.load_seconds)}")
    print(f"4 restore with the archived projections (copies in place, {folded:,} tail events folded):\n"
          f"           {_rate(total, got.projection_seconds)}", flush=True)
    if args.no_rebuild_restore:
        return 0
    settings = Settings(redis_url=rebuilt_url, data_dir=work / "restored-rebuilt", api_key="bench")
    again = await restore(settings, Path(full["path"]), force=False, rebuild=True, embedder=embedder)
    print(f"  its log load: {_rate(total, again.load_seconds)}")
    print(f"5 restore with a full rebuild of every projection:\n           {_rate(total, again.projection_seconds)}")
    same = {n: d.digest for n, d in got.digests.items()} == {n: d.digest for n, d in again.digests.items()}
    print(f"digests of 4 and 5 equal: {same}; rebuild/archived time ratio "
          f"{again.projection_seconds / max(got.projection_seconds, 1e-9):,.1f}x")
    del digests
    return 0 if same else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--tail", type=int, default=10_000, help="events the archived projections do not have")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--no-rebuild-restore", action="store_true", help="skip step 6 (a second full rebuild)")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    work = Path(tempfile.mkdtemp(prefix="zhiyi-bench-backup-"))
    try:
        with private_redis() as a, private_redis() as b, private_redis() as c:
            return asyncio.run(bench(args, work, [a, b, c]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
