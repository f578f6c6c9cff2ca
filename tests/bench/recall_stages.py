"""The serving index's search stages alone, in process, at N rows of one namespace (default 67k,
the bigger namespace of the 100k recall benchmark): BM25 scores, full-text search with and
without context neighbours, IVF dense search, a BM25 merge. No HTTP and no other process, so the figures move
much less with the machine's load than the end-to-end benchmark's.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/recall_stages.py [--n 67000] [--queries 300]
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from _harness import percentile  # noqa: E402  (puts the repository on sys.path)
from recall import query, sentence  # noqa: E402

from projections.serving.bm25 import BM25Params
from projections.serving.partition import Partition
from projections.text.lexical import index_text, query_text, terms
from projections.serving.dense import IvfParams


def timed(label: str, fn, n: int) -> None:
    fn(0)
    ms = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        ms.append((time.perf_counter() - t) * 1000)
    print(f"{label}: p50 {percentile(ms, 50):.3f} ms, p99 {percentile(ms, 99):.3f} ms")


def main(args) -> None:
    rng, nrng = random.Random(7), np.random.default_rng(1)
    part = Partition("bench", 512, BM25Params())
    vecs = nrng.standard_normal((args.n, 512)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    t = time.perf_counter()
    for i in range(args.n):  # one agent, one session: every row has context neighbours
        part.add({"id": f"m{i}"}, vecs[i], terms(index_text(sentence(rng, i))), "agent", i)
    part.ivf = part.train(IvfParams())
    print(f"indexed {args.n:,} rows in {time.perf_counter() - t:.1f} s ({len(part.ivf.centroids)} IVF lists)")
    qs = [terms(query_text(query(rng, i))) for i in range(args.queries)]
    qv = nrng.standard_normal((args.queries, 512)).astype(np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    matched = np.mean([np.count_nonzero(part.lexical.scores(q)[:args.n]) / args.n for q in qs[:50]])
    print(f"a query's terms match {matched:.0%} of the rows")
    timed("BM25 scores", lambda i: part.lexical.scores(qs[i]), args.queries)
    timed("full-text top 50, context 0.6", lambda i: part.lexical_search(qs[i], 50, 0.6), args.queries)
    timed("full-text top 50, context 0", lambda i: part.lexical_search(qs[i], 50, 0.0), args.queries)
    timed("dense top 50 (IVF)", lambda i: part.dense(qv[i], 50, IvfParams()), args.queries)
    merges(part.lexical)


def merges(lexical) -> None:
    """A live ingest's merge of the postings added since the last one (an eighth of the rest), as the
    index does it (inserted after each term's own) and as a sort of every posting would."""
    from projections.serving.bm25 import _Postings

    main = lexical._main
    rng = np.random.default_rng(3)
    n = len(main.slots) // 8
    added = (main.tids()[rng.integers(0, len(main.slots), n)], rng.integers(0, 10 ** 6, n).astype(np.int32),
             np.ones(n, dtype=np.uint16))
    terms = len(main.offsets) - 1
    everything = [np.concatenate([a, b]) for a, b in zip((main.tids(), main.slots, main.tfs), added)]
    timed(f"merge of {n:,} postings into {len(main.slots):,}: inserted", lambda i: main.merged(*added, terms), 5)
    timed("  the same, every posting sorted", lambda i: _Postings.grouped(*everything, terms), 5)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=67_000)
    p.add_argument("--queries", type=int, default=300)
    main(p.parse_args())
