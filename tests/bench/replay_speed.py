"""How fast a full `zhiyi replay` folds the log (issue 19, part 2): events/s of a rebuild of every
projection from a mixed log with a warm embedding cache, per projector (a script, not a pytest test).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/replay_speed.py [--events 100000]
        [--only memories,graph] [--no-rebuild] [--profile DIR]

In this process, over a redis-server it starts on a free port, a mixed log of --events events is
appended (deterministic, seed --seed): about 60% `memory.committed` (English and Chinese texts of 6-14
words, 4 namespaces, categories and decay classes varied, one in five derived from an episode), 30%
`recall.served` (the top 10 of one namespace's live memories) and 10% others: `episode.committed`,
`memory.feedback`, `memory.corrected`, `memory.deleted`, `entities.extracted`, `memory.marked_stale`,
`memory.validated`. The embedder is the tests' deterministic hash (HashEmbedder, dim --dim, 512 by
default: the size of a small real model's vectors) in front of the persistent embedding cache
(CachedEmbedder over an EmbeddingCache file), which a first fold of the memories projection alone
warms (its time printed as "cold", not part of the measure): the replays measured then find every
vector in the cache, like the issue's "warm cache".

Measured (wall = perf_counter, CPU = this process's CPU, every thread: SQLite and LanceDB work in
threads counts; the redis-server's own CPU is not counted):
- read+decode: `EventStore.read` over the whole log in batches of REBUILD_BATCH (10,000), no projector,
  with the collector tuned as a fold tunes it: the floor each projector pays for reading the log once.
- rebuild: `projections.core.replay.rebuild` into a fresh directory, in this process: every projector
  side by side, each batch read and decoded once for all (`projections.core.shared_reads`); total
  events/s = log events / wall seconds.
- two processes (--no-two-processes: not): the same rebuild with `second=SecondProcess(...)`, as
  `zhiyi replay` runs it: graph in a spawned second process, the rest here; its CPU
  is reported apart; digests checked against the rebuild's.
- per projector: each folded alone into another fresh directory like `fold_on` does (its runner's
  `catch_up` with REBUILD_BATCH, then `maintain` when it has one, then its digest, which is timed
  apart); wall and CPU seconds and events/s each, and their digests checked against the rebuild's.
The digests are printed so a faster fold can be checked to leave them as they are. They cover the
events' positions and stamps (wall-clock times), so two logs made alike still digest differently:
--log-dir DIR keeps the log (the redis-server's AOF) and the embedding cache in DIR, and a later run
with the same DIR reuses both (the log is not made again, --events and --seed are then ignored, and
the warming fold is skipped when the kept cache holds vectors), so the digests of two versions of the code can be compared on one log.
A projector's fold time includes its digest (as `rebuild` takes it); "digest s" is how long a
second digest takes, for reference.

--only NAME[,NAME]: the per-projector folds of these alone (the rebuild is still run unless
--no-rebuild). --profile DIR: each per-projector fold under cProfile, the stats written to
DIR/<name>.prof and the top 25 functions by cumulative and by own time printed.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import random
import resource
import shutil
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import structlog  # noqa: E402
from _harness import private_redis  # noqa: E402

from events.catalogue import (  # noqa: E402
    EntitiesExtracted, EpisodeCommitted, MemoryCommitted, MemoryCorrected, MemoryDeleted, MemoryFeedback,
    MemoryMarkedStale, MemoryValidated, RecallServed, new_event,
)
from events.envelope import Event  # noqa: E402
from events.redis.client import connect  # noqa: E402
from events.redis.store import EventStore  # noqa: E402
from projections.core.registry import make_projectors  # noqa: E402
from projections.core.rebuild_fold import REBUILD_BATCH, fewer_collections, fold_one as _fold  # noqa: E402
from gateway.process.log_reader import log_reader  # noqa: E402
from projections.core.rebuild_process import SecondProcess  # noqa: E402
from projections.core.replay import rebuild  # noqa: E402
from projections.models.cached_embedder import CachedEmbedder  # noqa: E402
from projections.models.embedding_cache import EmbeddingCache  # noqa: E402
from tests.hash_embedder import HashEmbedder  # noqa: E402

NAMESPACES = ["shared", "alice-main", "bob-main", "hermes-main"]
EN = ["deploy", "backup", "disk", "invoice", "editor", "cluster", "release", "budget", "audit", "search", "port",
      "server", "kernel", "password", "meeting", "customer", "schedule", "report", "database", "migration",
      "the", "on", "every", "before", "after", "prefers", "uses", "needs", "weekly", "staging", "production",
      "vim", "python", "redis", "invoice", "tuesday", "friday", "alice", "bob", "hermes", "latency", "cache"]
ZH = ["部署", "备份", "磁盘", "发票", "集群", "预算", "服务器", "数据库", "迁移", "会议", "客户", "报告", "每周",
      "周二", "生产", "测试", "编辑器", "密码", "缓存", "延迟", "喜欢", "使用", "需要", "之前", "之后", "的"]
CATEGORIES = [("fact", "system_fact"), ("preference", "user_preference"), ("event", "event"),
              ("procedure", "procedure"), ("fact", "project_context")]
ENTITY_KINDS = ["person", "project", "tool", "service", "place"]


def _text(rng: random.Random, i: int) -> str:
    if rng.random() < 0.3:
        return "".join(rng.choices(ZH, k=rng.randint(6, 14))) + f"（{i}）"
    return " ".join(rng.choices(EN, k=rng.randint(6, 14))) + f" #{i}"


def make_log(n: int, seed: int) -> list[Event]:
    """A mixed log of `n` events (see the module docstring), deterministic for (n, seed)."""
    rng = random.Random(seed)
    live: dict[str, list[str]] = {ns: [] for ns in NAMESPACES}     # live memory ids per namespace
    version: dict[str, int] = {}
    episodes: dict[str, list[str]] = {ns: [] for ns in NAMESPACES}
    out: list[Event] = []
    m = e = 0
    while len(out) < n:
        ns = rng.choice(NAMESPACES)
        agent = ns.split("-")[0]
        r = rng.random()
        ids = live[ns]
        if r < 0.60 or len(ids) < 20:
            mid = f"m{m:07d}"
            m += 1
            cat, decay = rng.choice(CATEGORIES)
            derived = rng.choice(episodes[ns][-50:]) if episodes[ns] and rng.random() < 0.2 else ""
            tags = tuple(rng.sample(["ops", "billing", "infra", "personal", "work"], rng.randint(0, 2)))
            out.append(new_event(MemoryCommitted(mid, _text(rng, m), ns, cat, decay, tags=tags, derived_from=derived,
                                                 source="distilled" if derived else "agent_inference"),
                                 ns=ns, agent=agent))
            ids.append(mid)
            version[mid] = 1
        elif r < 0.90:
            top = rng.sample(ids[-5000:], 10)
            out.append(new_event(RecallServed(" ".join(rng.choices(EN, k=5)), (ns,), tuple(top),
                                              tuple(round(0.9 - k * 0.05, 3) for k in range(10))),
                                 ns=ns, agent=agent))
        elif r < 0.92:
            eid = f"ep{e:06d}"
            e += 1
            turns = ({"role": "user", "content": _text(rng, e)}, {"role": "assistant", "content": "noted"})
            out.append(new_event(EpisodeCommitted(eid, ns, "conversation", "ok", turns, f"fp{e}"), ns=ns, agent=agent))
            episodes[ns].append(eid)
        elif r < 0.945:
            mid = rng.choice(ids)
            out.append(new_event(MemoryFeedback(mid, ns, rng.choice(["useful", "useful", "not_useful"])),
                                 ns=ns, agent=agent))
        elif r < 0.965:
            mid = rng.choice(ids)
            version[mid] += 1
            out.append(new_event(MemoryCorrected(mid, ns, version[mid], _text(rng, m + len(out)), "outdated"),
                                 ns=ns, agent=agent))
        elif r < 0.975:
            mid = ids.pop(rng.randrange(len(ids)))
            version[mid] += 1
            out.append(new_event(MemoryDeleted(mid, ns, version[mid], "user"), ns=ns, agent=agent))
        elif r < 0.99:
            mid = rng.choice(ids)
            ents = tuple((rng.choice(ENTITY_KINDS), rng.choice(EN[:20] + ZH[:12])) for _ in range(rng.randint(1, 4)))
            out.append(new_event(EntitiesExtracted(mid, ns, version[mid], ents, "bench"), ns=ns, agent=agent))
        elif r < 0.995:
            mid = rng.choice(ids)
            version[mid] += 1
            out.append(new_event(MemoryMarkedStale(mid, ns, version[mid], "superseded", rng.choice(ids)),
                                 ns=ns, agent=agent))
        else:
            mid, other = rng.choice(ids), rng.choice(ids)
            out.append(new_event(MemoryValidated(mid, ns, "corroborated", 0.1, other), ns=ns, agent=agent))
    return out


def _mix(events: list[Event]) -> str:
    counts: dict[str, int] = {}
    for ev in events:
        counts[ev.type] = counts.get(ev.type, 0) + 1
    return ", ".join(f"{t} {c:,} ({c * 100 / len(events):.1f}%)" for t, c in sorted(counts.items(), key=lambda x: -x[1]))


async def _read_all(store: EventStore) -> tuple[int, float, float]:
    store = EventStore(store.redis, origin=store.origin, epoch=store.epoch)   # nothing decoded yet
    w0, c0 = time.perf_counter(), time.process_time()
    cursor, n = None, 0
    with fewer_collections():   # as a fold reads (the default collector's scans cost this loop ~45%)
        while True:
            batch = await store.read(cursor, None, REBUILD_BATCH)
            if not batch:
                break
            n += len(batch)
            cursor = batch[-1].position
    return n, time.perf_counter() - w0, time.process_time() - c0


async def _fold_each(store: EventStore, root: Path, embedder, only: set[str] | None,
                     profile_dir: Path | None) -> dict[str, dict]:
    """Each projector folded alone, one after the other, as `fold_on` does (timed each)."""
    epoch = await store.log_epoch()
    out: dict[str, dict] = {}
    projectors = make_projectors(root, embedder, offline=True)
    try:
        for p in projectors:
            if only and p.name not in only:
                continue
            fresh = EventStore(store.redis, origin=store.origin, epoch=store.epoch)   # nothing decoded yet
            prof = cProfile.Profile() if profile_dir is not None else None
            w0, c0 = time.perf_counter(), time.process_time()
            if prof is not None:
                prof.enable()
            with fewer_collections():   # as fold_projectors folds
                d = await _fold(fresh, p, None, REBUILD_BATCH, epoch)
            if prof is not None:
                prof.disable()
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            w1 = time.perf_counter()
            await p.digest()   # _fold took it already: the second one is timed to take it out of the fold's
            digest_s = time.perf_counter() - w1
            out[p.name] = {"wall": wall, "cpu": cpu, "digest_s": digest_s, "digest": d.digest, "events": d.events}
            print(f"  {p.name:<14} {wall:8.2f} s wall {cpu:8.2f} s CPU", flush=True)
            if prof is not None:
                assert profile_dir is not None
                prof.dump_stats(str(profile_dir / f"{p.name}.prof"))
                for key in ("cumulative", "tottime"):
                    s = io.StringIO()
                    pstats.Stats(prof, stream=s).sort_stats(key).print_stats(25)
                    print(f"\n---- {p.name}: top 25 by {key}\n" + s.getvalue().split("\n\n", 2)[-1], flush=True)
    finally:
        for p in projectors:
            await p.close()
    return out


async def bench(args: argparse.Namespace, work: Path, url: str) -> None:
    redis = connect(url)
    store = EventStore(redis, origin="bench")
    await store.open_epoch(create=True)
    reused = bool(await store.length())
    if reused:
        events = [ev for batch in [await store.read(None, None, None)] for ev in batch]
        print(f"log: {len(events):,} events kept in {args.log_dir} ({_mix(events)})", flush=True)
    else:
        t0 = time.perf_counter()
        events = make_log(args.events, args.seed)
        made_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for at in range(0, len(events), 1000):
            await store.append(events[at:at + 1000])
        print(f"log: {len(events):,} events ({_mix(events)}); made in {made_s:.1f} s, appended in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
    inner = HashEmbedder(args.dim)
    cache = EmbeddingCache(Path(args.log_dir or work) / f"embedding-cache-{args.dim}.sqlite")
    embedder = CachedEmbedder(inner, cache)
    print(f"embedder: {inner.model_id} (deterministic hash, no model) behind the persistent embedding cache",
          flush=True)

    if reused and cache.count(inner.model_id):
        print(f"cold: skipped, the kept cache holds {cache.count(inner.model_id):,} vectors", flush=True)
    else:   # warm the cache: a first fold of the memories projection alone (not measured)
        t0 = time.perf_counter()
        await _fold_each(store, work / "warm", embedder, {"memories"}, None)
        print(f"cold: the memories projection folded once to warm the cache in {time.perf_counter() - t0:.1f} s "
              f"({inner.texts:,} texts embedded, {cache.count(inner.model_id):,} vectors cached)", flush=True)
        shutil.rmtree(work / "warm", ignore_errors=True)
    embedder.hits = embedder.misses = 0
    inner.texts = 0

    n, wall, cpu = await _read_all(store)
    print(f"read+decode: {n:,} events in {wall:.2f} s wall ({n / wall:,.0f} events/s), {cpu:.2f} s CPU "
          f"(EventStore.read, batches of {REBUILD_BATCH:,}, no projector)", flush=True)

    digests = None
    if not args.no_rebuild:
        fresh = EventStore(redis, origin="bench", epoch=store.epoch)   # nothing decoded yet
        w0, c0 = time.perf_counter(), time.process_time()
        digests = await rebuild(fresh, work / "rebuild", embedder)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        print(f"rebuild: {len(events):,} events in {wall:.1f} s wall ({len(events) / wall:,.0f} events/s), "
              f"{cpu:.1f} s CPU ({len(events) / cpu:,.0f} events per CPU s); cache hits {embedder.hits:,}, "
              f"misses {embedder.misses:,}", flush=True)
        shutil.rmtree(work / "rebuild", ignore_errors=True)

    if args.two_processes:
        # `zhiyi replay` as the CLI runs it: the graph projection folded by a spawned
        # second process (its CPU: RUSAGE_CHILDREN once it has ended)
        fresh = EventStore(redis, origin="bench", epoch=store.epoch)
        w0, c0 = time.perf_counter(), time.process_time()
        k0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        got = await rebuild(fresh, work / "two", embedder, second=SecondProcess(partial(log_reader, url), min_events=0))
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        k1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        child = (k1.ru_utime + k1.ru_stime) - (k0.ru_utime + k0.ru_stime)
        same = digests is None or all(digests[n].digest == d.digest for n, d in got.items())
        print(f"two processes: {len(events):,} events in {wall:.1f} s wall ({len(events) / wall:,.0f} events/s), "
              f"{cpu:.1f} s CPU here + {child:.1f} s in the second process; digests "
              f"{'not compared (no rebuild)' if digests is None else 'same as the rebuild' if same else 'DIFFERENT'}",
              flush=True)
        shutil.rmtree(work / "two", ignore_errors=True)

    print("per projector (each alone, as fold_on folds it):", flush=True)
    profile_dir = Path(args.profile) if args.profile else None
    if profile_dir is not None:
        profile_dir.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    rows = await _fold_each(store, work / "each", embedder, only, profile_dir)
    shutil.rmtree(work / "each", ignore_errors=True)

    print(f"\n{'projector':<14}{'wall s':>9}{'CPU s':>9}{'events/s':>10}{'CPU µs/ev':>11}{'digest s':>10}"
          f"  digest (rebuild: same?)")
    for name, r in rows.items():
        same = "" if digests is None else ("  same" if digests[name].digest == r["digest"] else "  DIFFERENT")
        print(f"{name:<14}{r['wall']:>9.2f}{r['cpu']:>9.2f}{len(events) / r['wall']:>10,.0f}"
              f"{r['cpu'] * 1e6 / len(events):>11.1f}{r['digest_s']:>10.2f}  {r['digest'][:16]}{same}")
    tw, tc = sum(r["wall"] for r in rows.values()), sum(r["cpu"] for r in rows.values())
    if rows:   # --only none: no per-projector fold
        print(f"{'sum':<14}{tw:>9.2f}{tc:>9.2f}{len(events) / tw:>10,.0f}{tc * 1e6 / len(events):>11.1f}")
    if digests is not None:
        print("\ndigests (rebuild):")
        for name, d in digests.items():
            print(f"  {name:<14} {d.digest}  events {d.events:,}  @ {d.position}")
    print("\ntarget (issue 19): >= 10,000 events/s for a full replay (warm cache)")
    embedder.close()
    await redis.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--dim", type=int, default=512, help="the hash embedder's dimension")
    parser.add_argument("--only", default="", help="per-projector folds of these projectors alone (comma-separated)")
    parser.add_argument("--no-rebuild", action="store_true", help="skip the full rebuild (per-projector folds only)")
    parser.add_argument("--profile", default="", help="cProfile each per-projector fold, stats into this directory")
    parser.add_argument("--two-processes", action=argparse.BooleanOptionalAction, default=True,
                        help="also rebuild with the second process `zhiyi replay` uses")
    parser.add_argument("--log-dir", default="", help="keep the log and the embedding cache here (reused next time)")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    work = Path(tempfile.mkdtemp(prefix="zhiyi-bench-replay-"))
    try:
        with private_redis(aof=bool(args.log_dir), workdir=Path(args.log_dir) if args.log_dir else None,
                           appendfsync="no") as url:
            asyncio.run(bench(args, work, url))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
