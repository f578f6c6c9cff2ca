"""The serving index's reduced-dimension IVF scan (projections.serving.dense) against the full scan,
on real embeddings: N of the recall benchmark's sentences (synthetic, low-rank) and the LoCoMo
dialog turns (real text), with their own queries. Prints, for each data set, the dimensions the
training chose, search time per query, and recall@10 / @50 of both scans against exact search.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/reduced_scan.py [--n 30000] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

from _harness import ROOT, percentile  # noqa: E402  (puts the repository on sys.path)
from recall import query, sentence  # noqa: E402

from projections.models.use_embedder import LocalUSEEmbedder
from projections.serving.dense import IvfParams, exact_top, train_ivf

LOCOMO = ROOT.parent / "shared" / "eval" / "locomo-dev.json"


def locomo(path: Path) -> tuple[list[str], list[str]]:
    turns, questions = [], []
    for conv in json.loads(path.read_text()):
        for key, session in conv["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns += [f"{t['speaker']}: {t['text']}" for t in session]
        questions += [q["question"] for q in conv["qa"]]
    return turns, questions


def compare(label: str, vectors: np.ndarray, queries: np.ndarray) -> None:
    live = np.ones(len(vectors), dtype=bool)
    exact = [{s for s, _ in exact_top(vectors, q, 50, live)} for q in queries]
    exact10 = [{s for s, _ in exact_top(vectors, q, 10, live)} for q in queries]
    for name, params in (("full scan", IvfParams(reduce_variance=0)), ("reduced scan", IvfParams())):
        ivf = train_ivf(vectors, live, params)
        ms, r10, r50 = [], 0.0, 0.0
        for q, want50, want10 in zip(queries, exact, exact10):
            t = time.perf_counter()
            got = ivf.search(vectors, len(vectors), q, 50, live, params)
            ms.append((time.perf_counter() - t) * 1000)
            ids = [s for s, _ in got]
            r10 += len(want10 & set(ids[:10])) / 10
            r50 += len(want50 & set(ids)) / 50
        dims = ivf.basis.shape[1] if ivf.basis is not None else vectors.shape[1]
        print(f"{label}, {name} ({dims} dims, {len(ivf.centroids)} lists): search p50 {percentile(ms, 50):.3f} ms, "
              f"recall@10 {r10 / len(queries):.4f}, recall@50 {r50 / len(queries):.4f} vs exact")


def main(args) -> None:
    model = LocalUSEEmbedder(threads=1)
    rng = random.Random(7)
    t = time.perf_counter()
    bench = model.embed([sentence(rng, i) for i in range(args.n)])
    bench_q = model.embed([query(rng, 10 ** 6 + i) for i in range(args.queries)])
    print(f"embedded {args.n:,} benchmark sentences in {time.perf_counter() - t:.1f} s")
    compare(f"benchmark sentences ({args.n:,})", bench, bench_q)
    if LOCOMO.exists():
        turns, questions = locomo(LOCOMO)
        compare(f"LoCoMo turns ({len(turns):,})", model.embed(turns), model.embed(questions[: args.queries]))
    else:
        print(f"{LOCOMO} not found: LoCoMo skipped")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=30_000)
    p.add_argument("--queries", type=int, default=200)
    main(p.parse_args())
