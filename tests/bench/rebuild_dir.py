"""A full rebuild of a kept `million.py` work dir's log, alone (a script, not a pytest test):

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/rebuild_dir.py --data-dir DIR [--runs 3]

`million.py --data-dir DIR` keeps its log (DIR/redis, the AOF) and data dir (DIR/data, with the warm
embedding cache). This replays that log the way million.py's replay phase does
(`million_phases.rebuild_all`: `projections.core.replay.rebuild`, every projection with its maintain
and digest, the graph in a second process) into a scratch dir, --runs times, without million.py's
ingest and recall measures: two versions of the code can be compared on one log, run after run
(e.g. a git worktree of the older one, run alternately with this one). Per run: events/s (wall), the CPU
of this process and of the second one, and every projection's digest (the same log must give the same
digests whatever the version).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import structlog  # noqa: E402
from _harness import ROOT, private_redis  # noqa: E402

sys.path.insert(0, str(ROOT))

import million_phases as phases  # noqa: E402
from events.redis.client import connect  # noqa: E402
from events.redis.store import EventStore  # noqa: E402
from gateway.process.log_reader import log_reader  # noqa: E402
from projections.core.rebuild_process import SecondProcess  # noqa: E402
from projections.core.replay import rebuild  # noqa: E402


async def run(url: str, data_dir: Path, runs: int) -> None:
    redis = connect(url)
    try:
        epoch = EventStore(redis, origin="bench")
        await epoch.open_epoch(create=False)
        embedder = phases.warm_embedder(data_dir)
        for i in range(runs):
            scratch = Path(tempfile.mkdtemp(prefix="scratch-rebuild-", dir=data_dir.parent))
            try:
                store = EventStore(redis, origin="bench-replay", epoch=epoch.epoch)   # nothing decoded yet
                n = await store.length()
                k0, c0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.process_time(), time.perf_counter()
                got = await rebuild(store, scratch / "into", embedder, second=SecondProcess(partial(log_reader, url)))
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                k1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                child = (k1.ru_utime + k1.ru_stime) - (k0.ru_utime + k0.ru_stime)
                print(f"run {i + 1}/{runs}: {n:,} events in {wall:.1f} s = {n / wall:,.0f} events/s; CPU here "
                      f"{cpu:.1f} s, second process {child:.1f} s; cache misses {embedder.misses}; load "
                      f"{os.getloadavg()[0]:.2f}", flush=True)
                print("  digests: " + " ".join(f"{k}={v.digest[:8]}" for k, v in sorted(got.items())), flush=True)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    finally:
        await redis.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", required=True, help="a million.py --data-dir (its redis/ and data/)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    work = Path(args.data_dir)
    if not (work / "redis").is_dir() or not (work / "data").is_dir():
        parser.error(f"{work} holds no million.py work dir (redis/ and data/)")
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    with private_redis(aof=True, workdir=work / "redis", appendfsync="no") as url:
        asyncio.run(run(url, work / "data", args.runs))
    return 0


if __name__ == "__main__":   # the replay's second process is spawned: it imports this module again
    sys.exit(main())
