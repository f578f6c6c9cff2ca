"""Chinese/English recall benchmark through the HTTP API, with dense-only and BM25-only beside it.

The protocol of ../shared/eval/bilingual-dev.md: every memory is committed, one per POST /commit,
in id order, into one fresh agent namespace; then every query is one POST /recall (API defaults
unless `--systems` says otherwise, top_k 3, cache off). Top-1 = the first result is in
`expected`; recall@3 = some expected id is in the first 3; per kind and over all 80.

The references are computed in this process over the same memories, in the same run:
- dense-only: the server's embedding model (USE multilingual v3, the default), cosine ranking;
- BM25-only: the serving index's own BM25 (`projections.serving.bm25.LexicalIndex`, the tuned
  k1/b) over the same analysed terms the projector indexes (`index_text` -> `terms`) and the
  same query analysis recall uses (`query_text`), without context smoothing.

With `--off-topic`, a few queries written for this script about things the memories do not
cover are recalled too, and the top scores of on-topic hits and off-topic queries are printed
(the `min_score` advice in the README).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/bilingual.py [--data PATH]
        [--systems 0.5:0.6,0:0] [--off-topic] [--dump out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import tempfile
import time
from pathlib import Path

import aiohttp
import numpy as np

from _harness import merged_into, percentile, private_redis, zhiyi_process  # noqa: E402  (sys.path set by _harness)
from locomo import reactions_done, post, wait_projected

ADMIN = "bench-admin-key"
DATA = Path(__file__).resolve().parents[3] / "shared" / "eval" / "bilingual-dev.json"
KINDS = ("en-en", "en-en-paraphrase", "zh-zh", "zh-zh-paraphrase", "en-zh", "zh-en", "mixed")
CROSS = ("en-zh", "zh-en")

#: Queries about what the memories never mention (written for this benchmark, not drawn from any
#: evaluation set): their top scores against the namespace say where `min_score` should sit.
OFF_TOPIC = (
    "How do I renew a Let's Encrypt certificate for nginx?",
    "What is the capital of Australia?",
    "Explain the difference between TCP and UDP.",
    "Which NVIDIA driver supports CUDA 12 on Ubuntu?",
    "How many moons does Jupiter have?",
    "What's a good recipe for sourdough bread?",
    "Who won the 2018 football World Cup?",
    "How do I undo the last git commit?",
    "What does a mortgage broker do?",
    "Translate 'good morning' into French.",
    "怎么给 nginx 配置 HTTPS 证书？",
    "澳大利亚的首都是哪里？",
    "量子纠缠是什么意思？",
    "红烧肉怎么做才好吃？",
    "2018 年世界杯冠军是哪个国家？",
    "如何撤销上一次 git 提交？",
    "木星有多少颗卫星？",
    "唐朝是哪一年建立的？",
    "怎样提高英语口语水平？",
    "什么是区块链的共识机制？",
)


def _system(spec: str) -> dict | None:
    """"default" (the API's own defaults) or diversity:context[:importance_weight]."""
    if spec == "default":
        return None
    parts = [float(x) for x in spec.split(":")]
    return {"diversity": parts[0], "context": parts[1], **({"importance_weight": parts[2]} if len(parts) > 2 else {})}


def dense_reference(memories: list[dict], queries: list[str]) -> tuple[np.ndarray, str]:
    """Cosines (queries x memories) with the server's default embedding model, in this process."""
    from projections.models.use_embedder import LocalUSEEmbedder

    model = LocalUSEEmbedder(threads=1)
    docs = model.embed([m["content"] for m in memories])
    qs = model.embed(queries)
    return qs @ docs.T, model.model_id


def bm25_reference(memories: list[dict], queries: list[str]) -> np.ndarray:
    """BM25 (queries x memories) with the serving index's BM25 class over the projector's terms."""
    from projections.serving.bm25 import LexicalIndex
    from projections.text.lexical import index_text, query_text, terms

    index = LexicalIndex()
    for slot, m in enumerate(memories):
        index.add(slot, terms(index_text(m["content"])))
    out = np.zeros((len(queries), len(memories)), dtype=np.float64)
    for i, q in enumerate(queries):
        scores = index.scores(terms(query_text(q)))
        if scores is not None:
            out[i] = scores[: len(memories)]
    return out


def ranked_ids(row: np.ndarray, ids: list[str], k: int = 3) -> list[str]:
    """Best first, ties by id (a row of zeros ranks nothing: the retriever had no evidence)."""
    order = sorted(range(len(ids)), key=lambda j: (-row[j], ids[j]))
    return [ids[j] for j in order[:k] if row[j] > 0]


def hits(ranked: list[str], expected: list[str]) -> tuple[int, int]:
    return int(bool(ranked) and ranked[0] in expected), int(any(r in expected for r in ranked[:3]))


def print_table(results: dict[str, list[tuple[str, int, int]]]) -> None:
    systems = list(results)
    groups = [(k, (k,)) for k in KINDS] + [("cross-lingual (en-zh + zh-en)", CROSS), ("all", KINDS)]
    width = max(len(g) for g, _ in groups) + 2
    print("top-1 / recall@3 (count of queries)")
    print(" " * width + "n    " + "".join(f"{s[:22]:>24}" for s in systems))
    for name, kinds in groups:
        cells = []
        n = 0
        for s in systems:
            rows = [(t, r) for kind, t, r in results[s] if kind in kinds]
            n = len(rows)
            cells.append(f"{sum(t for t, _ in rows):>3} / {sum(r for _, r in rows):<3} "
                         f"({sum(t for t, _ in rows) / max(n, 1):.2f}/{sum(r for _, r in rows) / max(n, 1):.2f})")
        print(f"{name:<{width}}{n:<5}" + "".join(f"{c:>24}" for c in cells))


async def main(args: argparse.Namespace) -> None:
    data = json.loads(Path(args.data).read_text())
    memories, queries = data["memories"], data["queries"]
    mem_ids = [m["id"] for m in memories]
    systems = [s.strip() for s in args.systems.split(",")]
    results: dict[str, list[tuple[str, int, int]]] = {f"zhiyi {s}": [] for s in systems}
    top_scores: dict[str, list[float]] = collections.defaultdict(list)
    dump: dict = {"memories": mem_ids, "queries": []}
    latencies: list[float] = []
    with private_redis() as redis_url, tempfile.TemporaryDirectory() as tmp:
        with zhiyi_process("up", redis_url, Path(tmp) / "data", ADMIN,
                           {"ZHIYI_MERGE": "1"} if args.merge else None) as base:
            async with aiohttp.ClientSession() as s:
                key = (await post(s, f"{base}/api/v1/agents/register", {"agent_id": "bilingual"}, ADMIN))["api_key"]
                started = time.perf_counter()
                to_id: dict[str, str] = {}
                last = 0
                for m in memories:
                    body = await post(s, f"{base}/api/v1/commit", {"content": m["content"], "category": m["category"]},
                                      key)
                    to_id[body["memory_id"]] = m["id"]
                    last = body["position"]
                await wait_projected(s, base, key, last)
                print(f"committed and projected {len(memories)} memories one per commit in "
                      f"{time.perf_counter() - started:.1f} s")
                await reactions_done(redis_url)
                merged = await merged_into(s, base, ADMIN)
                stands_for: dict[str, set[str]] = collections.defaultdict(set)   # a survivor stands for its merged
                for mid, survivor in merged.items():
                    stands_for[survivor].add(to_id.get(mid, mid))
                print(f"merging {'on (ZHIYI_MERGE=1)' if args.merge else 'off (the default)'}: {len(merged)} "
                      "memories merged")
                asked = [(q["query"], q) for q in queries]
                if args.off_topic:
                    asked += [(text, None) for text in OFF_TOPIC]
                for spec in systems:
                    extra = _system(spec)
                    for text, q in asked:
                        t = time.perf_counter()
                        body = await post(s, f"{base}/api/v1/recall",
                                          {"query": text, "top_k": 3, "cache": False, **(extra or {})}, key,
                                          ok=(200,))
                        latencies.append((time.perf_counter() - t) * 1000)
                        got = [to_id.get(r["memory_id"], r["memory_id"]) for r in body["results"]]
                        top = body["results"][0]["score"] if body["results"] else 0.0
                        if q is None:
                            top_scores[f"{spec} off-topic"].append(top)
                            continue
                        expected = list(q["expected"])
                        if stands_for:   # a merged expected memory is found through its survivor
                            expected += [to_id.get(r["memory_id"], "") for r in body["results"]
                                         if stands_for.get(r["memory_id"], set()) & set(q["expected"])]
                        t1, r3 = hits(got, expected)
                        results[f"zhiyi {spec}"].append((q["kind"], t1, r3))
                        top_scores[f"{spec} {'right' if t1 else 'wrong'} top-1"].append(top)
                        if spec == systems[0]:
                            dump["queries"].append({"query": text, "kind": q["kind"], "expected": q["expected"],
                                                    "got": got, "scores": [r["score"] for r in body["results"]],
                                                    "similarity": [r.get("similarity") for r in body["results"]]})
    texts = [q["query"] for q in queries]
    cos, model_id = dense_reference(memories, texts)
    bm25 = bm25_reference(memories, texts)
    for name, matrix in ((f"dense-only ({model_id})", cos), ("BM25-only (serving BM25)", bm25)):
        results[name] = [(q["kind"], *hits(ranked_ids(matrix[i], mem_ids), q["expected"]))
                         for i, q in enumerate(queries)]
    print(f"recall latency (client, c=1, cache off): p50 {percentile(latencies, 50):.1f} ms, "
          f"p95 {percentile(latencies, 95):.1f} ms")
    print_table(results)
    if args.off_topic:
        print("top score of the first result (p05 / p25 / median / p75 / p95, n):")
        for name, vals in sorted(top_scores.items()):
            print(f"  {name:<32} " + " / ".join(f"{percentile(vals, p):.3f}" for p in (5, 25, 50, 75, 95))
                  + f"  (n={len(vals)})")
    if args.dump:
        dump["cos"] = cos.round(5).tolist()
        dump["bm25"] = bm25.round(5).tolist()
        Path(args.dump).write_text(json.dumps(dump, ensure_ascii=False))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=str(DATA), help="bilingual-dev.json")
    p.add_argument("--systems", default="default",
                   help="comma-separated recall settings: 'default' (the API's) or diversity:context[:weight]")
    p.add_argument("--off-topic", action="store_true", help="also score off-topic queries (min_score advice)")
    p.add_argument("--merge", action="store_true", help="run with ZHIYI_MERGE=1 (merged ids count through "
                                                        "their survivors)")
    p.add_argument("--dump", default="", help="write per-query results and the reference matrices here")
    asyncio.run(main(p.parse_args()))
