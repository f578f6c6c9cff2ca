"""Paired A/B of `zhiyi replay --into` between two checkouts on one log (a script, not a pytest test).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/ab_replay.py --work DIR --root-a OTHER_CHECKOUT \
        [--root-b .] [--rounds 3]

DIR is a work dir `tests/bench/million.py --data-dir DIR` left (its Redis AOF under DIR/redis, its data
dir under DIR/data: the warm embedding cache). A private redis-server reloads that log; each round runs
the replay as a process (start-up included) from checkout A and from checkout B, in turns (A B, B A, ...)
so slow drifts of the machine hit both alike, each into a fresh scratch dir. Prints each wall time and
the medians. A checkout is a `git worktree` with this checkout's .venv linked in (`-m` runs its code).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import ROOT, private_redis  # noqa: E402
from recall import ADMIN  # noqa: E402


def main(args: argparse.Namespace) -> None:
    work = Path(args.work).resolve()
    roots = {"A": Path(args.root_a).resolve(), "B": Path(args.root_b).resolve()}
    walls: dict[str, list[float]] = {"A": [], "B": []}
    with private_redis(workdir=work / "redis") as url:
        env = dict(os.environ, REDIS_URL=url, API_KEY=ADMIN, OPENBLAS_NUM_THREADS="1", ZHIYI_LOG_LEVEL="warning")
        for r in range(args.rounds):
            for label in ("A", "B") if r % 2 == 0 else ("B", "A"):
                scratch = Path(tempfile.mkdtemp(prefix="ab-replay-", dir=work.parent))
                try:
                    t = time.perf_counter()
                    subprocess.run([sys.executable, "-m", "gateway.cli.main", "replay", "--into", str(scratch / "into"),
                                    "--data-dir", str(work / "data")], cwd=roots[label], env=env, check=True,
                                   stdout=subprocess.DEVNULL)
                    walls[label].append(time.perf_counter() - t)
                finally:
                    shutil.rmtree(scratch, ignore_errors=True)
                print(f"{label} round {r}: {walls[label][-1]:.1f} s   load {os.getloadavg()[0]:.2f}", flush=True)
    for label, w in walls.items():
        print(f"{label} ({roots[label]}): median {sorted(w)[len(w) // 2]:.1f} s of {[round(x, 1) for x in w]}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True, help="a million.py work dir (redis/ and data/)")
    p.add_argument("--root-a", required=True, help="checkout A")
    p.add_argument("--root-b", default=str(ROOT), help="checkout B (this one by default)")
    p.add_argument("--rounds", type=int, default=3)
    main(p.parse_args())
