"""The phases of `tests/bench/million.py` (see its docstring): the ingest through /batch-commit with its
log mix, the measures taken at one scale point, and the commit phase with its raw XADD baseline."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

import ingest as ingest_bench   # noqa: E402  (sys.path set by _harness)
from _harness import ROOT, disk_usage, percentile, pid_cpu_s, pid_rss, private_redis, tree_labels, zhiyi_process
from serving_memory import _text   # English and Chinese texts of 40-300 characters

from events import positions
from events.catalogue import (EntitiesExtracted, MemoryCorrected, MemoryDeleted, MemoryFeedback, MemoryMarkedStale,
                              MemoryValidated, RecallServed, new_event)
from events.envelope import Event
from events.episode_events import EpisodeCommitted
from events.redis.store import EventStore

ADMIN = ingest_bench.ADMIN
CATEGORIES = ["fact", "decision", "preference", "constraint", "pattern"]
SHARED_EVERY = 10          # one memory in ten goes to `shared`: 100k of 1M
OTHERS = [("feedback", 30), ("corrected", 20), ("entities", 20), ("episode", 10), ("deleted", 8), ("stale", 6),
          ("validated", 6)]


def query(rng: random.Random, i: int) -> str:
    """A distinct query in the memories' own vocabulary (20-60 characters)."""
    return _text(rng, 10 ** 8 + i)[: rng.randint(20, 60)]


def mix_events(rng: random.Random, mems: list[tuple[str, str]], agent: str, main: str, state: dict) -> list[Event]:
    """The rest of the log for a batch of k commits (60%): k/2 `recall.served` (30%) and k/6 others (10%),
    on the batch's own memories ((id, namespace) pairs), versions followed; `state['live']` loses the deleted."""
    alive, version, out = list(mems), {m: 1 for m, _ in mems}, []
    scope = (main, main.replace("-main", "-ephemeral"), "shared")
    for _ in range(len(mems) // 2):
        top = [m for m, _ in rng.sample(alive, min(10, len(alive)))]
        out.append(new_event(RecallServed(query(rng, rng.randrange(10 ** 6)), scope, tuple(top),
                                          tuple(round(0.9 - k * 0.05, 3) for k in range(len(top)))), ns=main, agent=agent))
    kinds, weights = zip(*OTHERS)
    for j in range(len(mems) // 6):
        mid, ns = rng.choice(alive)
        kind = rng.choices(kinds, weights)[0]
        if kind in ("corrected", "deleted", "stale"):
            version[mid] += 1
        v, data = version[mid], None   # type: int, Any
        if kind == "feedback":
            data = MemoryFeedback(mid, ns, rng.choice(["useful", "useful", "not_useful"]))
        elif kind == "corrected":
            data = MemoryCorrected(mid, ns, v, _text(rng, 10 ** 9 + j), "outdated")
        elif kind == "entities":
            data = EntitiesExtracted(mid, ns, v, tuple(("tool", w) for w in rng.sample(
                ["nginx", "redis", "部署脚本", "主力机", "PostgreSQL"], 2)), "bench")
        elif kind == "episode":
            eid = f"ep-{state['committed']}-{j}"
            turns = ({"role": "user", "content": _text(rng, j)}, {"role": "assistant", "content": "noted"})
            data, ns = EpisodeCommitted(eid, main, "conversation", "ok", turns, f"fp-{eid}"), main
        elif kind == "deleted" and len(alive) > 20:
            alive.remove((mid, ns))
            state["live"][ns] -= 1
            data = MemoryDeleted(mid, ns, v, "user")
        elif kind == "stale":
            data = MemoryMarkedStale(mid, ns, v, "superseded", rng.choice(alive)[0])
        else:
            data = MemoryValidated(mid, ns, "corroborated", 0.1, rng.choice(alive)[0])
        out.append(new_event(data, ns=ns, agent=agent))
    return out


async def caught_up(store: EventStore, timeout_s: float, label: str) -> float:
    """Wait until every published projector checkpoint reaches the log's last position; seconds waited."""
    last, t0, said = await store.last_position(), time.perf_counter(), time.perf_counter()
    while True:
        cps = await store.checkpoints()
        behind = {n: p for n, p in cps.items() if not positions.reached(p, last)}
        if "memories" in cps and not behind:
            return time.perf_counter() - t0
        if time.perf_counter() - t0 > timeout_s:
            raise TimeoutError(f"{label}: projectors behind {last} after {timeout_s:.0f} s: {behind}")
        if time.perf_counter() - said > 60:
            said = time.perf_counter()
            print(f"  {label}: waiting for {sorted(behind) or ['memories']} ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
        await asyncio.sleep(0.25)


async def ingest(s: aiohttp.ClientSession, base: str, store: EventStore, state: dict, target: int,
                 seed: int) -> dict:
    """Commit memories up to `target` through /batch-commit (the agents in turn, a batch each; one in ten
    into `shared`), each batch followed by its log mix appended straight to the log (see mix_events);
    then wait for every projector. The projection rate counts from the first batch to the last fold."""
    rng, batch, n0 = random.Random(seed * 10 ** 7 + state["committed"]), state["batch"], state["committed"]
    events0, t0, said = await store.length(), time.perf_counter(), time.perf_counter()
    for b in range(n0, target, batch):
        agent, key, main = state["agents"][(b // batch) % len(state["agents"])]
        entries_: list[dict[str, Any]] = []
        for i in range(b, min(target, b + batch)):
            text = _text(rng, i)
            state["text_bytes"] += len(text.encode())
            entries_.append({"content": text, "category": CATEGORIES[i % 5], **({"tags": ["ops"]} if i % 4 == 0 else {}),
                             **({"namespace": "shared"} if i % SHARED_EVERY == 0 else {})})
        async with s.post(f"{base}/api/v1/batch-commit", json={"entries": entries_}, headers={"X-API-Key": key}) as r:
            assert r.status == 201, await r.text()
            body = await r.json()
        mems = [(res["memory_id"], e.get("namespace", main)) for res, e in zip(body["results"], entries_)]
        for _, ns in mems:
            state["live"][ns] = state["live"].get(ns, 0) + 1
        state["committed"] += len(mems)
        await store.append(mix_events(rng, mems, agent, main, state))
        if time.perf_counter() - said > 60:
            said = time.perf_counter()
            print(f"  committed {state['committed']:,} ({time.perf_counter() - t0:.0f} s)", flush=True)
    committed_s = time.perf_counter() - t0
    await caught_up(store, 6 * 3600, "ingest")
    wall, events = time.perf_counter() - t0, await store.length() - events0
    return {"memories": target - n0, "events": events, "commit_s": committed_s, "wall_s": wall,
            "memories_per_s": (target - n0) / wall, "events_per_s": events / wall, "load": os.getloadavg()[0]}


async def _audits_folded(store: EventStore, length0: int, recalls: int) -> None:
    """Wait for the audit writer to append the recalls' `recall.served` (within a second or two), then for
    every projector to fold them."""
    for _ in range(300):
        if await store.length() >= length0 + recalls:
            break
        await asyncio.sleep(0.1)
    await caught_up(store, 600, "recall audits")


async def _recall(s: aiohttp.ClientSession, base: str, h: dict, q: str, extra: dict) -> tuple[float, float]:
    t = time.perf_counter()
    async with s.post(f"{base}/api/v1/recall", json={"query": q, "top_k": 10, "cache": False, **extra},
                      headers=h) as r:
        assert r.status == 200, await r.text()
        body = await r.json()
    return (time.perf_counter() - t) * 1000, body["took_ms"]


_EMBEDDERS: dict[str, Any] = {}


def warm_embedder(data_dir: Path) -> Any:
    """The default embedder over the data dir's embedding cache, its model loaded (not timed: a cache miss
    then costs one embedding, not the model's load), its counters at zero; one per cache for this process."""
    from projections.models.embedding import make_embedder

    path = str(data_dir / "cache" / "embeddings.sqlite")
    if path not in _EMBEDDERS:
        _EMBEDDERS[path] = make_embedder(bge_endpoint=None, bge_api_key=None, bge_model=None, cache_path=path)
        _EMBEDDERS[path].inner.embed(["load the model"])
    embedder = _EMBEDDERS[path]
    embedder.hits = embedder.misses = 0
    return embedder


def exact_scan(data_dir: Path, scope: list[str], queries: int) -> dict:
    """The in-process reference of a recall: an exact float32 scan (numpy) of the scope's live vectors,
    read from the memories projection; query vectors are stored ones plus noise (no model)."""
    import lancedb

    table = lancedb.connect(str(data_dir / "projections" / "memories")).open_table("memories")
    where = "is_deleted = false AND namespace IN (" + ", ".join(f"'{ns}'" for ns in scope) + ")"
    live = table.search().where(where).select(["id", "vector"]).limit(None).to_arrow()
    full = live.column("vector").combine_chunks().values.to_numpy(zero_copy_only=False).reshape(live.num_rows, -1)
    full = np.ascontiguousarray(full, dtype=np.float32)
    gen, took = np.random.default_rng(7), []
    for _ in range(queries):
        q = full[gen.integers(len(full))] + 0.02 * np.asarray(gen.standard_normal(full.shape[1]), dtype=np.float32)
        t = time.perf_counter()
        scores = full @ q
        np.argpartition(-scores, min(9, len(scores) - 1))[:10]
        took.append((time.perf_counter() - t) * 1000)
    return {"rows": int(live.num_rows), "p50_ms": percentile(took, 50), "p99_ms": percentile(took, 99)}


async def fold_only(store: EventStore, data_dir: Path) -> dict:
    """The in-process reference of a replay: the memories projector alone folding the whole log (batches
    of 500, no compaction, no index, no serving indexes) with the data dir's (warm) embedding cache."""
    from projections.core.registry import projection_dir
    from projections.core.runner import ProjectionRunner
    from projections.memories.projector import MemoriesProjector

    scratch, embedder = Path(tempfile.mkdtemp(prefix="scratch-fold-", dir=data_dir.parent)), warm_embedder(data_dir)
    projector = MemoriesProjector(projection_dir(scratch, "memories"), embedder, compact_after_rows=0,
                                  vector_index_min_rows=0, serving_indexes=False)
    try:
        n, t = await store.length(), time.perf_counter()
        await ProjectionRunner(EventStore(store.redis, origin="bench-fold"), projector, publish=False,
                               batch_size=500).catch_up()
        wall = time.perf_counter() - t
        return {"events": n, "wall_s": wall, "events_per_s": n / wall, "misses": embedder.misses}
    finally:
        await projector.close()
        shutil.rmtree(scratch, ignore_errors=True)


async def rebuild_all(store: EventStore, data_dir: Path, redis_url: str) -> dict:
    """What `zhiyi replay --into` runs (projections.core.replay.rebuild: every projection, then each one's
    maintain and digest; graph in a second process, as the CLI does on a log this long), in this process
    with the data dir's warm embedding cache: events/s."""
    from functools import partial

    from gateway.process.log_reader import log_reader
    from projections.core.rebuild_process import SecondProcess
    from projections.core.replay import rebuild

    scratch, embedder = Path(tempfile.mkdtemp(prefix="scratch-rebuild-", dir=data_dir.parent)), warm_embedder(data_dir)
    try:
        store = EventStore(store.redis, origin="bench-replay", epoch=store.epoch)   # nothing decoded yet
        n, t = await store.length(), time.perf_counter()
        await rebuild(store, scratch / "into", embedder, second=SecondProcess(partial(log_reader, redis_url)))
        wall = time.perf_counter() - t
        return {"events": n, "wall_s": wall, "events_per_s": n / wall, "misses": embedder.misses}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def replay_cli(redis_url: str, data_dir: Path, events: int) -> dict:
    """`zhiyi replay --into SCRATCH` (every projection, the data dir's warm cache), a real process: wall."""
    scratch = Path(tempfile.mkdtemp(prefix="scratch-replay-", dir=data_dir.parent))
    env = dict(os.environ, REDIS_URL=redis_url, API_KEY=ADMIN, OPENBLAS_NUM_THREADS="1", ZHIYI_LOG_LEVEL="warning")
    try:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "gateway.cli.main", "replay", "--into", str(scratch / "into"),
                        "--data-dir", str(data_dir)], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {"events": events, "wall_s": wall, "events_per_s": events / wall}


async def recall_figures(s: aiohttp.ClientSession, base: str, h: dict, extra: dict, store: EventStore,
                         rng: random.Random, args, projectors: list[int], gateway: int) -> dict:
    """Recall over HTTP, cache off, distinct queries: p50/p99 at c=1, then recalls/s at c=16 for
    args.seconds, with the projectors' CPU over that burst until every one of its audits is folded, per
    recall: all of it (the figure checked), and less their rest rate (timers, heartbeats) over the same
    time; the burst starts once the projectors are at rest (<= 20 ms of CPU a second, 5 minutes at most)."""
    out: dict = {}
    length0 = await store.length()
    for i in range(20):   # warm-up
        await _recall(s, base, h, query(rng, -i - 1), extra)
    lat, took = [], []
    for i in range(args.queries):
        ms, server = await _recall(s, base, h, query(rng, i), extra)
        lat.append(ms)
        took.append(server)
    out.update(p50=percentile(lat, 50), p99=percentile(lat, 99), took_p50=percentile(took, 50),
               load_c1=os.getloadavg()[0])
    await _audits_folded(store, length0, 20 + args.queries)
    waited = time.perf_counter()
    while True:   # until the projectors are at rest (a maintenance pass, e.g. a compaction, is over): <= 2%
        rest0, t = sum(pid_cpu_s(p) for p in projectors), time.perf_counter()
        await asyncio.sleep(args.rest_seconds)
        rest_rate = (sum(pid_cpu_s(p) for p in projectors) - rest0) / (time.perf_counter() - t)
        if rest_rate <= 0.02 or time.perf_counter() - waited > 300:
            break
    print(f"    c=16 burst, {args.seconds:g} s ({'include_namespaces' if extra else 'default scope'}) ...", flush=True)
    cpu0 = (sum(pid_cpu_s(p) for p in projectors), pid_cpu_s(gateway))
    length0, done, lat16 = await store.length(), 0, []
    deadline, counter = time.perf_counter() + args.seconds, iter(range(10 ** 9))

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            lat16.append((await _recall(s, base, h, query(rng, 10 ** 6 + next(counter)), extra))[0])
            done += 1

    t = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(16)))
    elapsed = time.perf_counter() - t
    out.update(c16=done / elapsed, c16_p50=percentile(lat16, 50), load_c16=os.getloadavg()[0])
    await _audits_folded(store, length0, done)
    print("    ... its audits folded", flush=True)
    cpu1, spent = (sum(pid_cpu_s(p) for p in projectors), pid_cpu_s(gateway)), time.perf_counter() - t
    out.update(proj_cpu_raw_ms=(cpu1[0] - cpu0[0]) * 1000 / done, gw_cpu_ms=(cpu1[1] - cpu0[1]) * 1000 / done,
               proj_rest_ms_per_s=rest_rate * 1000, audits=await store.length() - length0,
               proj_cpu_ms=max(0.0, cpu1[0] - cpu0[0] - rest_rate * spent) * 1000 / done)
    return out


async def lance_versions(data_dir: Path) -> tuple[int, int]:
    """(bytes on disk, bytes of the latest version) of every LanceDB table of the projections. The
    difference is older versions: the projectors prune them once they are older than their retention
    (10 minutes), so right after an ingest the disk holds the versions of its last 10 minutes too."""
    import lancedb

    on_disk = latest = 0
    for table_dir in sorted((data_dir / "projections").glob("*/*.lance")):
        on_disk += sum(f.stat().st_size for f in table_dir.rglob("*") if f.is_file())
        db = await lancedb.connect_async(str(table_dir.parent))
        table = await db.open_table(table_dir.stem)
        latest += int((await table.stats())["total_bytes"])
        table.close()
    return on_disk, latest


async def measure(s: aiohttp.ClientSession, base: str, pids: dict, store: EventStore, state: dict, work: Path,
                  redis_url: str, args, run: int) -> dict:
    """Every figure at the present size, once: disk, recall_figures for two scopes of agent
    bench0 ("own": its namespaces + shared, the default; "all": every agent's -main added with
    include_namespaces, i.e. every stored memory), RSS by process (after the recalls), replay, and the
    in-process references."""
    out: dict = {"n": state["committed"], "run": run}
    agent, key, main = state["agents"][0]
    own = [main, main.replace("-main", "-ephemeral"), "shared"]
    others = [m for _, _, m in state["agents"][1:]]
    labels = tree_labels(pids["gateway"])
    sizes = dict(disk_usage(work, depth=3))
    out["disk"] = {k: sizes.get(k, 0) for k in ("data", "data/projections", "data/cache", "redis",
                                                 "data/projections/graph")}
    out["disk"]["."] = out["disk"]["data"] + out["disk"]["redis"]   # not a scratch dir a killed run left
    out["disk"]["lance"], out["disk"]["lance_latest"] = await lance_versions(work / "data")
    rng = random.Random(f"{state['committed']}-{run}-{args.seed}")
    projectors = [p for p, label in labels.items() if label == "projectors"]
    out["recall"] = {}
    out["serving_wait_s"] = await serving_index_ready(s, base)
    for name, scope, extra in (("own", own, {}), ("all", own + others, {"include_namespaces": others})):
        figures = await recall_figures(s, base, {"X-API-Key": key}, extra, store, rng, args, projectors,
                                       pids["gateway"])
        out["recall"][name] = {"scope": sum(state["live"].get(ns, 0) for ns in scope), **figures}
    # RSS after the recalls: the gateway's serving index has followed the projection by then
    rss: dict[str, int] = {"redis": pid_rss(pids["redis"])}
    for pid, label in tree_labels(pids["gateway"]).items():
        rss[label] = rss.get(label, 0) + pid_rss(pid)
    out["rss"], out["load_rss"] = rss, os.getloadavg()[0]
    # printed at once: the replays below hold the whole projection state in this process
    print(f"    measured: RSS MB {({k: v >> 20 for k, v in rss.items()})}; recall "
          + "; ".join(f"{name} scope {r['scope']:,}: c=1 p50 {r['p50']:.2f} p99 {r['p99']:.2f} ms, c=16 {r['c16']:,.0f}/s, "
                      f"gateway {r['gw_cpu_ms']:.3f} ms, projectors {r['proj_cpu_raw_ms']:.3f} ms CPU/recall"
                      for name, r in out["recall"].items()), flush=True)
    if args.replay:
        out["replay"] = await rebuild_all(store, work / "data", redis_url)
        out["load_replay"] = os.getloadavg()[0]
        if args.replay_cli:
            out["replay_cli"] = replay_cli(redis_url, work / "data", await store.length())
        out["ref_fold"] = await fold_only(store, work / "data")
    out["ref_scan"] = {name: exact_scan(work / "data", scope, args.ref_queries)
                       for name, scope in (("own", own), ("all", own + others))}
    return out


async def commit_phase(args) -> dict:
    """What ingest.py measures, on a fresh Redis and `zhiyi serve` (no projector: an empty serving index,
    so no conflict check): commits/s at c=16, batch-commit memories/s (batches of 1000), and the raw
    baseline: the very stream entries the batch path appended (read back, so encoded before the timed
    loop), XADDed again in pipelines of the same size with the same index writes as append.lua's."""
    with private_redis() as url, tempfile.TemporaryDirectory() as tmp, \
            zhiyi_process("serve", url, Path(tmp) / "data", ADMIN) as base:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as s:
            key = await ingest_bench.register(s, base)
            await ingest_bench.commit_latency(s, base, key, 200)   # warm-up
            c16 = await ingest_bench.commit_throughput(s, base, key, 16, args.commit_seconds)
            load_c16 = os.getloadavg()[0]
            before = await ingest_bench.last_position(url)
            batch = await ingest_bench.batch_throughput(s, base, key, args.commit_batches, 1000)
        raw, raw_events = await ingest_bench.raw_replay(url, before)
    return {"c16": c16, "load_c16": load_c16, "batch": batch, "raw": raw, "raw_events": raw_events,
            "ratio": batch / raw, "load_batch": os.getloadavg()[0]}


async def serving_index_ready(s: aiohttp.ClientSession, base: str, timeout_s: float = 900) -> float:
    """Wait, as a load balancer's readiness check would, until /health says recalls are served from
    memory at the memories projector's checkpoint (after a start, the index loads: ~15 s at 100k, LanceDB
    serving meanwhile at 0.3-0.5 s a recall). Returns the seconds waited."""
    t = time.perf_counter()
    while time.perf_counter() - t < timeout_s:
        async with s.get(f"{base}/health") as r:
            health = await r.json()
        served = health.get("serving_index") or {}
        if served.get("ready") and served.get("position") == health["projectors"].get("memories", {}).get("position"):
            break
        await asyncio.sleep(0.2)
    else:
        print(f"  (the serving index was not ready in {timeout_s:.0f} s: going on)", flush=True)
    waited = time.perf_counter() - t
    if waited > 1:
        print(f"    serving index ready after {waited:.1f} s", flush=True)
    return waited


async def projectors_ready(data_dir: Path, timeout_s: float = 600) -> None:
    """Wait until `zhiyi up`'s projector child has loaded its model (it touches its ready file)."""
    for _ in range(int(timeout_s * 10)):
        if (data_dir / ".projectors-ready").exists():
            return
        await asyncio.sleep(0.1)
    print(f"  (the projector child did not report ready in {timeout_s:.0f} s: going on)", flush=True)
