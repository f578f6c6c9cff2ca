"""What a recall's audit costs the projectors (issue 19, part 3): CPU per `recall.served` event, per
projector, at the batch sizes the live runner sees (a script, not a pytest test).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/audit_cost.py [--memories 20000] [--recalls 3000]
        [--batches 1,16,256] [--repeat 1] [--live 250] [--gather 0.3]

In this process, over a redis-server it starts on a free port: --memories `memory.committed` in 4
namespaces are appended and folded by every live projector (registry.make_projectors, not measured),
their directory kept as the base; then --recalls `recall.served` events (top 10 of one namespace,
5-word queries, like a recall answering) are appended. For each batch size, every projector starts
from a copy of the base and its runner folds the recalls with that batch size, checking the log's
epoch and publishing its checkpoints to Redis with it (as live): the CPU seconds of this process
(every thread: SQLite and LanceDB work in threads count) over the events folded, one projector after
the other (the per-projector rows, and their total) and then all at once on one store ("together", as
the live RunnerSet runs them: what runners share, reads and publishes, is shared). Reading the events
from Redis is part of each runner's cost; each event is decoded once per measurement (the store
remembers the last few thousand); the redis-server's own CPU is not counted. Batch 1 is an idle
system's live tail (one recall, one batch); at c=16 the runner finds about 16 new events a read. The
embedder is a deterministic hash (recalls embed nothing here). Rate limits play no part (no HTTP).
--repeat N folds each batch size N times and keeps the least (the machine's noise only ever adds).

Then (--live RATE; 0: not) the live tail: every runner tailing the log at once (`run`, as the RunnerSet
runs them, with its group commit of recall audits: --gather seconds, the RunnerSet's by default) while
--recalls more recalls arrive at RATE a second, appended every 0.1 s as the gateway's audit writer
appends them (gateway.http.audit): the CPU of this process from the first append until every runner
published the last, less the appends' own (the same appends timed alone).
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

from events import positions  # noqa: E402
from events.catalogue import MemoryCommitted, RecallServed, new_event  # noqa: E402
from events.envelope import Event  # noqa: E402
from events.redis.client import connect  # noqa: E402
from events.redis.store import EventStore  # noqa: E402
from projections.core.registry import make_projectors  # noqa: E402
from projections.core.runner import ProjectionRunner  # noqa: E402
from projections.core.runner_set import AUDIT_GATHER_S  # noqa: E402
from projections.models.cached_embedder import CachedEmbedder  # noqa: E402
from tests.fixture_log import FixtureEmbedder  # noqa: E402

NAMESPACES = ["shared", "alice-main", "bob-main", "hermes-main"]
REST_S = 2.0             # the live runners' CPU at rest is measured this long before the recalls
AUDIT_INTERVAL_S = 0.1   # gateway.http.audit.AuditWriter's interval_s: how often the gateway appends its audits
WORDS = ["deploy", "backup", "disk", "invoice", "editor", "cluster", "release", "budget", "audit", "search",
         "部署", "备份", "磁盘", "发票", "集群", "预算"]


async def _fold_all(store: EventStore, root: Path, embedder, batch_size: int) -> dict[str, float]:
    """CPU seconds per projector to fold what the log holds after each one's checkpoint."""
    store = EventStore(store.redis, origin=store.origin, epoch=store.epoch)   # nothing decoded yet
    out = {}
    for projector in make_projectors(root, embedder):
        runner = ProjectionRunner(store, projector, batch_size=batch_size, maintain_every_s=float("inf"),
                                  epoch=store.epoch)
        t0 = time.process_time()
        await runner.catch_up()
        out[projector.name] = time.process_time() - t0
        await projector.close()
    return out


async def _fold_together(store: EventStore, root: Path, embedder, batch_size: int) -> float:
    """CPU seconds for every projector's runner to fold what the log holds, all at once on one store
    (as the live RunnerSet runs them: what runners share — reads, publishes — is shared here too)."""
    store = EventStore(store.redis, origin=store.origin, epoch=store.epoch)   # nothing decoded yet
    projectors = make_projectors(root, embedder)
    runners = [ProjectionRunner(store, p, batch_size=batch_size, maintain_every_s=float("inf"), epoch=store.epoch)
               for p in projectors]
    t0 = time.process_time()
    await asyncio.gather(*(r.catch_up() for r in runners))
    spent = time.process_time() - t0
    for p in projectors:
        await p.close()
    return spent


async def _tail_live(store: EventStore, root: Path, embedder, recalls: list[Event], rate: float, gather_s: float,
                     append_s: float) -> float:
    """CPU seconds for every projector's runner tailing the log (`run`, all at once on one store, as live)
    while `recalls` are appended at `rate` a second in appends every AUDIT_INTERVAL_S, until every runner
    published the last: the process's CPU less `append_s` (what those appends cost alone)."""
    store = EventStore(store.redis, origin=store.origin, epoch=store.epoch)
    projectors = make_projectors(root, embedder)
    reached: dict[str, str] = {}
    want: list[str] = [await store.last_position() or ""]
    caught_up = asyncio.Event()

    def notify(name: str, position: str) -> None:
        reached[name] = position
        if all(positions.reached(reached.get(p.name), want[0]) for p in projectors):
            caught_up.set()

    runners = [ProjectionRunner(store, p, notify=notify, epoch=store.epoch, maintain_every_s=float("inf"),
                                gather_s=gather_s) for p in projectors]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(r.run(stop)) for r in runners]
    await caught_up.wait()   # what the log held already (not measured)
    t0 = time.process_time()
    await asyncio.sleep(REST_S)
    print(f"  live runners at rest: {(time.process_time() - t0) * 1000 / REST_S:.1f} ms of CPU a second", flush=True)
    loop = asyncio.get_running_loop()
    t0 = time.process_time()
    due = loop.time()
    for chunk in _appends(recalls, rate):
        caught_up.clear()
        want[0] = (await store.append(chunk)).position
        due += AUDIT_INTERVAL_S
        await asyncio.sleep(max(0.0, due - loop.time()))
    await caught_up.wait()
    spent = time.process_time() - t0 - append_s
    stop.set()
    await asyncio.gather(*tasks)
    for p in projectors:
        await p.close()
    return spent


def _appends(recalls: list[Event], rate: float) -> list[list[Event]]:
    """`recalls` cut as the gateway's audit writer appends them at `rate` recalls a second."""
    per = max(1, round(rate * AUDIT_INTERVAL_S))
    return [recalls[at:at + per] for at in range(0, len(recalls), per)]


async def bench(args: argparse.Namespace, work: Path, url: str) -> None:
    rng = random.Random(19)
    embedder = CachedEmbedder(FixtureEmbedder(), None)
    redis = connect(url)
    store = EventStore(redis, origin="bench")
    await store.open_epoch(create=True)
    print(f"rate limits: off (no HTTP); embedder: {FixtureEmbedder.model_id} (no model); "
          f"{args.memories:,} memories, {args.recalls:,} recall.served", flush=True)
    by_ns: dict[str, list[str]] = {ns: [] for ns in NAMESPACES}
    for at in range(0, args.memories, 1000):
        batch = []
        for i in range(at, min(at + 1000, args.memories)):
            ns = NAMESPACES[i % 4]
            by_ns[ns].append(f"m{i:07d}")
            batch.append(new_event(MemoryCommitted(f"m{i:07d}", f"{' '.join(rng.sample(WORDS, 6))} #{i}", ns, "fact",
                                                   "system_fact"), ns=ns, agent=ns.split("-")[0]))
        await store.append(batch)
    base = work / "base"
    t0 = time.perf_counter()
    await _fold_all(store, base, embedder, 500)
    print(f"base: {args.memories:,} commits folded by every projector in {time.perf_counter() - t0:.1f} s "
          "(not measured)", flush=True)
    for at in range(0, args.recalls, 500):
        batch = []
        for i in range(at, min(at + 500, args.recalls)):
            ns = NAMESPACES[i % 4]
            ids = tuple(rng.sample(by_ns[ns][-5000:], 10))
            batch.append(new_event(RecallServed(" ".join(rng.sample(WORDS, 5)), (ns,), ids,
                                                tuple(round(0.9 - k * 0.05, 3) for k in range(10))),
                                   ns=ns, agent=ns.split("-")[0]))
        await store.append(batch)

    rows: dict[int, dict[str, float]] = {}
    together: dict[int, float] = {}
    for size in args.batches:
        copy = work / f"batch-{size}"
        for _ in range(args.repeat):   # the least of the repeats: the machine's noise only ever adds
            shutil.copytree(base, copy)
            got = await _fold_all(store, copy, embedder, size)
            rows[size] = {n: min(t, rows.get(size, got)[n]) for n, t in got.items()}
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(base, copy)
            spent = await _fold_together(store, copy, embedder, size)
            together[size] = min(spent, together.get(size, spent))
            shutil.rmtree(copy, ignore_errors=True)
    live: float | None = None
    if args.live:   # after the catch-ups: its recalls lengthen the log
        def recalls() -> list[Event]:
            out = []
            for i in range(args.recalls):
                ns = NAMESPACES[i % 4]
                out.append(new_event(RecallServed(" ".join(rng.sample(WORDS, 5)), (ns,),
                                                  tuple(rng.sample(by_ns[ns][-5000:], 10)),
                                                  tuple(round(0.9 - k * 0.05, 3) for k in range(10))),
                                     ns=ns, agent=ns.split("-")[0]))
            return out

        for _ in range(args.repeat):
            alone = _appends(recalls(), args.live)
            t0 = time.process_time()
            for chunk in alone:
                await store.append(chunk)
            append_s = time.process_time() - t0
            copy = work / "live"
            shutil.copytree(base, copy)
            spent = await _tail_live(store, copy, embedder, recalls(), args.live, args.gather, append_s)
            live = spent if live is None else min(live, spent)
            shutil.rmtree(copy, ignore_errors=True)
    names = list(rows[args.batches[0]])
    print(f"\nCPU ms per recall.served, per projector (this process, all threads), by runner batch size:")
    print(f"{'projector':<14}" + "".join(f"{'batch ' + str(s):>12}" for s in args.batches))
    for name in names:
        print(f"{name:<14}" + "".join(f"{rows[s][name] * 1000 / args.recalls:>12.3f}" for s in args.batches))
    print(f"{'total':<14}" + "".join(f"{sum(rows[s].values()) * 1000 / args.recalls:>12.3f}" for s in args.batches))
    print(f"{'together':<14}" + "".join(f"{together[s] * 1000 / args.recalls:>12.3f}" for s in args.batches)
          + "   (the runners at once on one store, as live)")
    if live is not None:
        print(f"live tail: {live * 1000 / args.recalls:.3f} ms per recall.served with the runners tailing (run, as "
              f"live, audits gathered up to {args.gather:g} s) while {args.live:g} recalls a second are appended every "
              f"{AUDIT_INTERVAL_S:g} s (the appends' own CPU taken out)")
    print("target (issue 19): total <= 0.5 ms at the batch sizes of c=16 recalls (about 16)")
    await redis.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--recalls", type=int, default=3_000)
    parser.add_argument("--batches", type=lambda s: [int(x) for x in s.split(",")], default=[1, 16, 256])
    parser.add_argument("--repeat", type=int, default=1, help="fold each batch size this often, keep the least")
    parser.add_argument("--live", type=float, default=250.0, help="then tail recalls arriving at this rate a second (0: no)")
    parser.add_argument("--gather", type=float, default=AUDIT_GATHER_S,
                        help="the live runners' group commit of recall audits, seconds (0: none)")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    work = Path(tempfile.mkdtemp(prefix="zhiyi-bench-audit-"))
    try:
        with private_redis() as url:
            asyncio.run(bench(args, work, url))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
