"""Consolidation benchmarks, in-process: topic clustering of memory vectors (HDBSCAN).

Pure in-process figures: no Redis, no zhiyi process, no projections. The memory texts are real
evaluation texts read from ../shared/eval/ (never copied into the repository), embedded with the
project's offline embedder (USE multilingual v3, 512-d, `make_embedder` as the gateway builds it)
through a persistent embedding cache, so a second run does not embed again.

The texts, deduplicated, in this order, until `--n` are taken:
  LoCoMo (locomo-dev.json, 5 conversations): every dialog turn ("speaker: text"), the two
  bilingual-dev.json sets (120 memories, 80 queries), LoCoMo observations, event summaries,
  session summaries, the sentences of those summaries, photo captions ("speaker shared <caption>",
  the captions read "a photo of ..."), QA questions and QA answers.
There are fewer than 10,000 distinct texts in these files: the run says how many it took. The
10,000-point timing asked of `topic_clusters` is then measured separately on a set padded with
perturbed copies of the real vectors (timing only; said so in the output).

Sections (`main` runs them in turn; `--sections` picks some):
  clusters     `commands.consolidation.clusters.topic_clusters` with the shipped defaults (median of 3
               runs), what it finds, full-dimension HDBSCAN on the same vectors, their agreement
               (ARI, AMI), and a small table of alternative `reduce_to` values.
  calibration  `calibrate` on synthetic recall histories with known decay rates
               (tests/bench/consolidation_synthetic.py): fitted vs true, the ±50% clamp, error vs uses.
  patterns     `mine_patterns` on synthetic clusters with planted patterns: precision/recall, and a
               second run that must mine nothing new.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/consolidation.py [--n 10000] [--quick]
        [--cache PATH] [--sections clusters calibration patterns]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from _harness import ROOT  # noqa: E402,F401  (puts the repo root on sys.path)
from commands.consolidation.clusters import Clustering, agreement, topic_clusters  # noqa: E402
from consolidation_synthetic import bench_calibration, bench_patterns  # noqa: E402

EVAL = Path(__file__).resolve().parents[3] / "shared" / "eval"
LOCOMO = EVAL / "locomo-dev.json"
BILINGUAL = EVAL / "bilingual-dev.json"
DEFAULT_CACHE = Path.home() / ".cache" / "zhiyi" / "bench-consolidation-embeddings.sqlite"
FULL_DIM_LIMIT_S = 300.0      # full-dimension HDBSCAN slower than this on all points -> subsample
SUBSAMPLE = 5000
ALTERNATIVES = (16, 32, 64)
SCALE_N = 10_000
SECTIONS = ("clusters", "calibration", "patterns", "run")
RUN_ADMIN = "bench-admin-key"
#: each source's memories get a category, so the patterns step has groups to find
CATEGORY_OF = {"turn": "fact", "observation": "fact", "event": "decision", "summary": "decision",
               "sentence": "fact", "caption": "fact", "question": "preference", "answer": "fact", "memory": "fact",
               "query": "preference"}   # by the id's source prefix (memory_texts)


# ---- data -------------------------------------------------------------------------------------

def _clean(text: object) -> str:
    return " ".join(str(text).split())


def memory_texts(limit: int) -> tuple[list[str], list[str], dict[str, int]]:
    """Up to `limit` distinct texts: (ids, texts, how many each source gave), sources in the
    documented order. Ids are "<source>:<n>" so a cluster's members say where they came from."""
    sources: dict[str, list[str]] = {name: [] for name in (
        "locomo turn", "bilingual memory", "bilingual query", "locomo observation", "locomo event",
        "locomo session summary", "locomo summary sentence", "locomo photo caption", "locomo question",
        "locomo answer")}
    convs = json.loads(LOCOMO.read_text())
    for conv in convs:
        for key, turns in conv["conversation"].items():
            if re.fullmatch(r"session_\d+", key) and isinstance(turns, list):
                for t in turns:
                    sources["locomo turn"].append(f"{t['speaker']}: {_clean(t['text'])}")
    bilingual = json.loads(BILINGUAL.read_text())
    sources["bilingual memory"] += [m["content"] for m in bilingual["memories"]]
    sources["bilingual query"] += [q["query"] for q in bilingual["queries"]]
    for conv in convs:
        for per_speaker in conv["observation"].values():
            for items in per_speaker.values():
                sources["locomo observation"] += [item[0] for item in items]
        for per_speaker in conv["event_summary"].values():
            for speaker, items in per_speaker.items():
                if speaker != "date":
                    sources["locomo event"] += list(items)
        for summary in conv["session_summary"].values():
            sources["locomo session summary"].append(summary)
            sources["locomo summary sentence"] += re.split(r"(?<=[.!?])\s+", _clean(summary))
        for turns in (v for k, v in conv["conversation"].items() if re.fullmatch(r"session_\d+", k)):
            for t in turns if isinstance(turns, list) else []:
                if t.get("blip_caption"):
                    sources["locomo photo caption"].append(f"{t['speaker']} shared {t['blip_caption']}")
        sources["locomo question"] += [q["question"] for q in conv["qa"]]
        sources["locomo answer"] += [str(q["answer"]) for q in conv["qa"] if "answer" in q]
    ids: list[str] = []
    texts: list[str] = []
    seen: set[str] = set()
    taken: dict[str, int] = {}
    for name, items in sources.items():
        for raw in items:
            text = _clean(raw)
            if len(texts) >= limit:
                break
            if text and text not in seen:
                seen.add(text)
                ids.append(f"{name.split()[-1]}:{len(ids)}")
                texts.append(text)
                taken[name] = taken.get(name, 0) + 1
    return ids, texts, taken


def embed(texts: list[str], cache: Path, batch: int = 256) -> tuple[np.ndarray, float, int]:
    """The offline embedder's vectors of `texts` (batched, cached): (vectors, seconds, cache misses)."""
    from projections.models.embedding import make_embedder

    cache.parent.mkdir(parents=True, exist_ok=True)
    embedder = make_embedder(bge_endpoint=None, bge_api_key=None, bge_model=None, cache_path=str(cache))
    try:
        started = time.perf_counter()
        parts = [embedder.embed(texts[i:i + batch]) for i in range(0, len(texts), batch)]
        seconds = time.perf_counter() - started
        return np.concatenate(parts).astype(np.float32, copy=False), seconds, embedder.misses
    finally:
        embedder.close()


# ---- clusters ---------------------------------------------------------------------------------

def timed(fn: Callable[[], Clustering], repeat: int = 1) -> tuple[float, Clustering, bool]:
    """(median seconds over `repeat` calls, the result, whether every call gave the same result)."""
    seconds: list[float] = []
    results: list[Clustering] = []
    for _ in range(repeat):
        started = time.perf_counter()
        results.append(fn())
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), results[0], all(r == results[0] for r in results)


def describe(result: Clustering, n: int) -> str:
    sizes = [c.size for c in result.clusters]
    if not sizes:
        return f"0 clusters, noise {result.noise / n:.1%}"
    return (f"{len(sizes)} clusters, noise {result.noise / n:.1%} ({result.noise} of {n}), cluster size "
            f"mean {statistics.mean(sizes):.1f} / median {statistics.median(sizes):.0f} / max {max(sizes)}")


def clustered_ari(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[float, int]:
    """ARI over the points both labelings put in some cluster, and how many those are."""
    from sklearn.metrics import adjusted_rand_score

    left, right = np.asarray(a), np.asarray(b)
    both = (left >= 0) & (right >= 0)
    return (float(adjusted_rand_score(left[both], right[both])) if both.any() else float("nan")), int(both.sum())


def padded(vectors: np.ndarray, n: int, seed: int = 13, sigma: float = 0.02) -> np.ndarray:
    """`vectors` plus (n - len) perturbed copies of randomly chosen rows (gaussian noise `sigma`
    per dimension, re-normalised): a timing set of n rows when there are fewer real ones."""
    rng = np.random.default_rng(seed)
    extra = vectors[rng.integers(0, len(vectors), n - len(vectors))]
    extra = extra + rng.normal(scale=sigma, size=extra.shape)
    extra /= np.linalg.norm(extra, axis=1, keepdims=True)
    return np.concatenate([vectors, extra.astype(np.float32)])


def bench_clusters(args: argparse.Namespace) -> None:
    import inspect

    defaults = {k: p.default for k, p in inspect.signature(topic_clusters).parameters.items()
                if p.default is not inspect.Parameter.empty}
    shipped = defaults["reduce_to"]
    print("== topic clusters (commands.consolidation.clusters.topic_clusters) ==")
    ids, texts, taken = memory_texts(args.n)
    text_of = dict(zip(ids, texts))
    short = f" -- FEWER than the {args.n:,} asked: every distinct text these files have" if len(texts) < args.n else ""
    print(f"texts: {len(texts):,} distinct memory texts from {EVAL}{short}")
    for name, count in taken.items():
        print(f"  {name:<26}{count:>6,}")
    vectors, seconds, misses = embed(texts, args.cache)
    print(f"embedding: {len(texts):,} texts -> {vectors.shape[1]}-d (use-multilingual-v3, batches of 256) in "
          f"{seconds:.1f} s; {misses:,} embedded, {len(texts) - misses:,} from the cache {args.cache} "
          f"(not part of any clustering figure)")
    n = len(ids)
    print(f"\ndefaults: min_cluster_size={defaults['min_cluster_size']} min_samples={defaults['min_samples']} "
          f"reduce_to={shipped}; HDBSCAN prims_kdtree, leaf selection, 1 core")
    t_default, result, stable = timed(lambda: topic_clusters(ids, vectors), repeat=3)
    print(f"topic_clusters, defaults, {n:,} x {vectors.shape[1]}: {t_default:.2f} s (median of 3), clustered in "
          f"{result.dims} dims; identical result in all 3 runs: {'yes' if stable else 'NO'}")
    print(f"  {describe(result, n)}")
    print("  the 5 largest clusters, 3 members closest to the centroid each:")
    for cluster in result.clusters[:5]:
        print(f"  [{cluster.cluster_id}] size {cluster.size}")
        for member in cluster.member_ids[:3]:
            print(f"      {text_of[member][:100]}")

    # full-dimension reference: estimate from 2,000 points (O(n^2)), subsample when too slow
    probe = 2000
    predicted = 0.0
    if n > probe:
        t_probe, _, _ = timed(lambda: topic_clusters(ids[:probe], vectors[:probe], reduce_to=None))
        predicted = t_probe * (n / probe) ** 2
    rows = np.arange(n)
    if predicted > FULL_DIM_LIMIT_S and n > SUBSAMPLE:
        rows = np.sort(np.random.default_rng(0).choice(n, SUBSAMPLE, replace=False))
        print(f"\nfull dimensions would take ~{predicted:.0f} s on {n:,} points (> {FULL_DIM_LIMIT_S:.0f} s): "
              f"comparison on a seeded {SUBSAMPLE:,}-point subsample, reduced runs on the same subsample")
    sub_ids = [ids[i] for i in rows]
    sub_vectors = vectors[rows]
    m = len(sub_ids)
    t_full, full, _ = timed(lambda: topic_clusters(sub_ids, sub_vectors, reduce_to=None))
    print(f"\nfull-dimension HDBSCAN (reduce_to=None), {m:,} x {vectors.shape[1]}: {t_full:.1f} s (1 run)")
    print(f"  {describe(full, m)}")

    print(f"\nreduce_to vs full dimensions, {m:,} points (time: median of 3; agreement with the full-dimension "
          "labels; noise counts as a label in ARI/AMI; 'ARI clustered' = ARI over the points both put in a cluster)")
    print(f"  {'reduce_to':>9} {'time s':>7} {'clusters':>8} {'noise':>6} {'ARI':>6} {'AMI':>6} {'same noise':>10} "
          f"{'ARI clustered':>14}")
    for reduce_to in sorted({*ALTERNATIVES, shipped} - {None}):
        t, labels, _ = timed(lambda: topic_clusters(sub_ids, sub_vectors, reduce_to=reduce_to), repeat=3)
        agree = agreement(labels.labels, full.labels)
        ari_both, count = clustered_ari(labels.labels, full.labels)
        mark = " *" if reduce_to == shipped else "  "
        print(f"{mark}{reduce_to:>9} {t:>7.2f} {len(labels.clusters):>8} {labels.noise / m:>6.1%} {agree['ari']:>6.3f} "
              f"{agree['ami']:>6.3f} {agree['noise_agreement']:>10.1%} {ari_both:>8.3f} ({count:,})")
    print(f"  {'None':>9} {t_full:>7.2f} {len(full.clusters):>8} {full.noise / m:>6.1%} {1:>6.3f} {1:>6.3f} "
          f"{1:>10.1%} {1:>8.3f}")
    print("  * = shipped default")

    if args.quick or n >= SCALE_N:
        print(f"\nscale check at {SCALE_N:,} points: " + ("skipped (--quick)" if args.quick else "the run above"))
        return
    scale = padded(vectors, SCALE_N)
    scale_ids = [f"p:{i}" for i in range(SCALE_N)]
    t_scale, big, stable = timed(lambda: topic_clusters(scale_ids, scale), repeat=3)
    print(f"\nscale check, defaults, {SCALE_N:,} x {scale.shape[1]}: the {n:,} real vectors + {SCALE_N - n:,} "
          f"perturbed copies of random real ones (noise 0.02 per dim, re-normalised; synthetic, timing only): "
          f"{t_scale:.2f} s (median of 3), identical in all 3 runs: {'yes' if stable else 'NO'}")
    print(f"  {describe(big, SCALE_N)}")


# ---- main -------------------------------------------------------------------------------------

async def bench_run(args: argparse.Namespace) -> None:
    """`zhiyi up` on a private Redis (gateway, projector child; no reactions, no triggers, no commit
    check: this measures consolidation, not ingest), the texts batch-committed into one namespace,
    then three runs through the admin endpoint: the first writes the patterns, the next find none."""
    import tempfile

    import aiohttp

    from _harness import private_redis, zhiyi_process

    ids, texts, _ = memory_texts(args.n)
    env = {"ZHIYI_NO_REACTIONS": "1", "ZHIYI_TICK_INTERVAL_S": "0", "ZHIYI_CONFLICT_CHECK": "0"}
    with private_redis() as redis_url, tempfile.TemporaryDirectory() as tmp:
        with zhiyi_process("up", redis_url, Path(tmp) / "data", RUN_ADMIN, env) as base:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1800)) as s:
                async def call(path: str, body: dict, key: str = RUN_ADMIN) -> dict:
                    async with s.post(base + path, json=body, headers={"X-API-Key": key}) as r:
                        if r.status not in (200, 201):
                            raise RuntimeError(f"{path}: {r.status} {await r.text()}")
                        return await r.json()

                key = (await call("/api/v1/agents/register", {"agent_id": "bench"}))["api_key"]
                started = time.perf_counter()
                position = ""
                for i in range(0, len(texts), 1000):
                    entries = [{"content": t[:16000], "category": CATEGORY_OF[mid.split(":")[0]]}
                               for mid, t in zip(ids[i:i + 1000], texts[i:i + 1000])]
                    position = (await call("/api/v1/batch-commit", {"entries": entries}, key))["position"]
                committed = time.perf_counter() - started
                while True:   # /stats with after= answers 504 until the memories projection has it
                    async with s.get(base + "/api/v1/stats", params={"after": position},
                                     headers={"X-API-Key": RUN_ADMIN}) as r:
                        if r.status == 200:
                            break
                        if r.status != 504:
                            raise RuntimeError(f"/api/v1/stats: {r.status} {await r.text()}")
                projected = time.perf_counter() - started
                print(f"stored: {len(texts):,} memories committed in {committed:.1f} s, projected (embedded, LanceDB) "
                      f"after {projected:.1f} s; the run below reads them back from LanceDB")
                for n in range(3):
                    t0 = time.perf_counter()
                    run = await call("/api/v1/admin/consolidate", {})
                    took = time.perf_counter() - t0
                    steps = ", ".join(f"{st['step']} {st['status']} {st['detail'].get('ms', '-')} ms" for st in run["steps"])
                    r = run["report"]
                    print(f"  run {n + 1}: {took:.2f} s over HTTP (report duration {r['duration_ms']} ms): "
                          f"{r['memories']:,} memories, {r['clusters_found']} clusters, noise {r['noise_fraction']:.1%}, "
                          f"{r['patterns_written']} patterns written")
                    print(f"         {steps}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="memory texts to take (at most what the data has)")
    parser.add_argument("--quick", action="store_true", help="2,000 texts, no 10k scale check")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="embedding cache (SQLite)")
    parser.add_argument("--sections", nargs="+", default=list(SECTIONS), choices=SECTIONS)
    args = parser.parse_args()
    if args.quick:
        args.n = min(args.n, 2000)

    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    print(f"consolidation bench: pure in-process figures; no Redis, no zhiyi process, no projections "
          f"(OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, {os.cpu_count()} cpus)\n")
    if "clusters" in args.sections:
        bench_clusters(args)
    if "calibration" in args.sections:
        print("\n== decay calibration on a synthetic history with known rates "
              "(commands.consolidation.calibration.calibrate) ==")
        bench_calibration()
    if "run" in args.sections:
        print("\n== a whole consolidation run over the stored memories (POST /api/v1/admin/consolidate) ==")
        asyncio.run(bench_run(args))
    if "patterns" in args.sections:
        print("\n== pattern mining on synthetic clusters with planted patterns "
              "(commands.consolidation.patterns.mine_patterns) ==")
        bench_patterns()


if __name__ == "__main__":
    main()
