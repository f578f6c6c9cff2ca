"""LoCoMo retrieval benchmark through the HTTP API, with a plain BM25 of the same turns beside it.

Every dialog turn of a conversation becomes one memory ("speaker: text") of one agent per
conversation (its own namespace), committed through /batch-commit; every question is a
POST /recall with that agent's key (top_k 25, cache off). recall@k = fraction of a question's
evidence turns in the top k, averaged over the questions that have evidence (adversarial
included); MRR = 1 / rank of the first evidence turn. Constants were tuned on conv-26/30 only;
conv-41/42/43 are held out (../shared/eval/README.md).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/locomo.py [--systems 0.5:0.6,0:0.6,0:0]
        [--conversations conv-41,conv-42] [--limit-questions 20] [--data PATH]

`--systems` lists the recall settings to measure as diversity:context[:importance_weight] (the
API default is 0.5:0.6:0.2; context 0 turns context-neighbour smoothing off, importance_weight 0
ranks by relevance alone).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import math
import re
import tempfile
import time
from pathlib import Path

import aiohttp

from _harness import percentile, private_redis, zhiyi_process  # noqa: E402  (sys.path set by _harness)

ADMIN = "bench-admin-key"
DATA = Path(__file__).resolve().parents[3] / "shared" / "eval" / "locomo-dev.json"
TUNE = ("conv-26", "conv-30")
HELD_OUT = ("conv-41", "conv-42", "conv-43")
KS = (5, 10, 25)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


# ---- data -------------------------------------------------------------------------------------

def evidence_ids(raw: list) -> list[str]:
    """Evidence dia_ids, normalised: "D8:6; D9:17" -> two ids, "D:11:26" -> "D11:26"."""
    out = []
    for item in raw:
        for part in str(item).split(";"):
            m = re.match(r"D:?(\d+):(\d+)", part.replace(" ", ""))
            if m:
                out.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return out


def load(path: Path, wanted: list[str] | None, limit: int | None) -> dict[str, dict]:
    convs = {}
    for c in json.loads(path.read_text()):
        cid = c["sample_id"]
        if wanted and cid not in wanted:
            continue
        conv = c["conversation"]
        sessions = sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
        turns = [(t["dia_id"], f"{t['speaker']}: {t['text']}") for k in sessions for t in conv[k]]
        qs = [{"q": q["question"], "ev": evidence_ids(q.get("evidence", [])), "cat": q["category"]}
              for q in c["qa"]][:limit]
        convs[cid] = {"turns": turns, "qs": qs}
    return convs


# ---- plain BM25 (the README's baseline: lowercase words, k1 1.2, b 0.75, no stemming/stop words) ----

WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


class PlainBM25:
    def __init__(self, docs: list[tuple[str, str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.ids = [i for i, _ in docs]
        self.tfs = [collections.Counter(words(t)) for _, t in docs]
        self.lens = [sum(tf.values()) for tf in self.tfs]
        self.avg = sum(self.lens) / max(1, len(self.lens))
        n = len(docs)
        df = collections.Counter(w for tf in self.tfs for w in tf)
        self.idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}
        self.k1, self.b = k1, b

    def search(self, query: str, k: int) -> list[str]:
        terms = words(query)
        scored = []
        for doc_id, tf, length in zip(self.ids, self.tfs, self.lens):
            s = 0.0
            for w in terms:
                f = tf.get(w)
                if f:
                    s += self.idf[w] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * length / self.avg))
            if s > 0:
                scored.append((-s, doc_id))
        return [doc_id for _, doc_id in sorted(scored)[:k]]


# ---- metrics ----------------------------------------------------------------------------------

def question_scores(ranked: list[set[str]], evidence: list[str]) -> dict[str, float]:
    """`ranked`: the dia_ids each result stands for, best first."""
    ev = set(evidence)
    out = {}
    for k in KS:
        found = set().union(*ranked[:k]) & ev if ranked else set()
        out[f"r@{k}"] = len(found) / len(ev)
    out["mrr"] = next((1 / r for r, ids in enumerate(ranked, 1) if ids & ev), 0.0)
    return out


def mean_row(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {m: 100 * sum(r[m] for r in rows) / len(rows) for m in rows[0]}


def print_tables(per_system: dict[str, dict[str, list[tuple[str, int, dict]]]], convs: list[str]) -> None:
    groups = [(f"held-out ({', '.join(c for c in HELD_OUT if c in convs)})", [c for c in HELD_OUT if c in convs]),
              (f"tune ({', '.join(c for c in TUNE if c in convs)})", [c for c in TUNE if c in convs]),
              (f"all ({len(convs)})", convs)]
    metrics = [f"r@{k}" for k in KS] + ["mrr"]
    width = max(len(s) for s in per_system) + 2
    for title, members in groups:
        if not members:
            continue
        print(f"\n{title}")
        print(f"  {'system':{width}}" + "".join(f"{m:>8}" for m in metrics) + f"{'n':>7}")
        for system, rows in per_system.items():
            sel = [s for cid, _, s in rows if cid in members]
            row = mean_row(sel)
            print(f"  {system:{width}}" + "".join(f"{row[m]:8.1f}" for m in metrics) + f"{len(sel):7d}")
    for title, members in groups:
        if not members:
            continue
        print(f"\nper category, {title}: r@5 / r@10 / r@25 / MRR (n)")
        for cat, name in CATEGORIES.items():
            cells = []
            for system, rows in per_system.items():
                sel = [s for cid, c, s in rows if cid in members and c == cat]
                if sel:
                    row = mean_row(sel)
                    cells.append(f"{system}: " + " / ".join(f"{row[m]:.1f}" for m in metrics))
            if cells:
                n = sum(1 for cid, c, _ in next(iter(per_system.values())) if cid in members and c == cat)
                print(f"  {cat} {name:12} (n={n:3d})  " + "  |  ".join(cells))


# ---- the run ----------------------------------------------------------------------------------

async def post(s: aiohttp.ClientSession, url: str, body: dict, key: str, ok: tuple[int, ...] = (200, 201)) -> dict:
    async with s.post(url, json=body, headers={"X-API-Key": key}) as r:
        if r.status not in ok:
            raise RuntimeError(f"{url}: {r.status} {await r.text()}")
        return await r.json()


async def ingest(s: aiohttp.ClientSession, base: str, cid: str, turns: list[tuple[str, str]]) -> tuple[str, dict, int]:
    agent = f"locomo-{cid}"
    key = (await post(s, f"{base}/api/v1/agents/register", {"agent_id": agent}, ADMIN))["api_key"]
    to_dia: dict[str, set[str]] = collections.defaultdict(set)
    last = 0
    for start in range(0, len(turns), 1000):
        chunk = turns[start:start + 1000]
        body = await post(s, f"{base}/api/v1/batch-commit",
                          {"entries": [{"content": text, "tags": ["locomo"]} for _, text in chunk]}, key)
        for (dia, _), res in zip(chunk, body["results"], strict=True):
            to_dia[res["memory_id"]].add(dia)
        last = body["position"]
    return key, to_dia, last


async def wait_projected(s: aiohttp.ClientSession, base: str, key: str, after: int) -> None:
    while True:
        async with s.post(f"{base}/api/v1/recall", json={"query": "warm up", "after": after, "cache": False},
                          headers={"X-API-Key": key}) as r:
            await r.read()
            if r.status == 200:
                return
        await asyncio.sleep(0.2)


async def reactions_done(redis_url: str, timeout_s: float = 600.0) -> float:
    """Wait until the reactions group has handled the whole log (PassiveValidator and quality
    policies run after each commit); returns the seconds waited."""
    import redis.asyncio as aioredis

    r = aioredis.from_url(redis_url)
    started = time.perf_counter()
    try:
        while time.perf_counter() - started < timeout_s:
            last = await r.xrevrange("zhiyi:events", "+", "-", count=1)
            groups = await r.xinfo_groups("zhiyi:events")
            g = next((g for g in groups if g["name"] in (b"reactions", "reactions")), None)
            if g is not None and last and g["last-delivered-id"] == last[0][0] and int(g["pending"]) == 0:
                break
            await asyncio.sleep(0.5)
    finally:
        await r.aclose()
    return time.perf_counter() - started


async def ask(s, base, key, question: str, system: tuple[float, float, float], latencies: list[float],
              took: list[float]) -> list[str]:
    diversity, context, weight = system
    t = time.perf_counter()
    body = await post(s, f"{base}/api/v1/recall",
                      {"query": question, "top_k": 25, "diversity": diversity, "context": context,
                       "importance_weight": weight, "cache": False}, key, ok=(200,))
    latencies.append((time.perf_counter() - t) * 1000)
    took.append(body["took_ms"])
    return [r["memory_id"] for r in body["results"]]


def _system(spec: str) -> tuple[float, float, float]:
    """diversity:context[:importance_weight] (the API defaults 0.5:0.6:0.2)."""
    parts = [float(x) for x in spec.split(":")]
    return (parts[0], parts[1], parts[2] if len(parts) > 2 else 0.2)


async def main(args: argparse.Namespace) -> None:
    wanted = [c.strip() for c in args.conversations.split(",")] if args.conversations else None
    data = load(Path(args.data), wanted, args.limit_questions)
    convs = list(data)
    systems = [_system(spec) for spec in args.systems.split(",")]
    label = {sc: f"zhiyi diversity={sc[0]} context={sc[1]} importance_weight={sc[2]}" for sc in systems}
    per_system: dict[str, list] = {label[sc]: [] for sc in systems}
    per_system["plain BM25"] = []
    latencies: list[float] = []
    took: list[float] = []
    skipped = 0
    with private_redis() as redis_url, tempfile.TemporaryDirectory() as tmp:
        with zhiyi_process("up", redis_url, Path(tmp) / "data", ADMIN) as base:
            async with aiohttp.ClientSession() as s:
                started = time.perf_counter()
                agents = {cid: await ingest(s, base, cid, data[cid]["turns"]) for cid in convs}
                for key, _, last in agents.values():
                    await wait_projected(s, base, key, last)
                n_turns = sum(len(data[c]["turns"]) for c in convs)
                print(f"committed and projected {n_turns:,} turns of {len(convs)} conversations "
                      f"in {time.perf_counter() - started:.1f} s; reactions caught up "
                      f"{await reactions_done(redis_url):.1f} s later")
                started = time.perf_counter()
                for cid in convs:
                    key, to_dia, _ = agents[cid]
                    bm25 = PlainBM25(data[cid]["turns"])
                    for q in data[cid]["qs"]:
                        if not q["ev"]:
                            skipped += 1
                            continue
                        for sc in systems:
                            ids = await ask(s, base, key, q["q"], sc, latencies, took)
                            ranked = [to_dia.get(mid, set()) for mid in ids]
                            per_system[label[sc]].append((cid, q["cat"], question_scores(ranked, q["ev"])))
                        ranked = [{dia} for dia in bm25.search(q["q"], 25)]
                        per_system["plain BM25"].append((cid, q["cat"], question_scores(ranked, q["ev"])))
                print(f"asked {len(latencies):,} recalls in {time.perf_counter() - started:.1f} s; "
                      f"{skipped} questions without evidence skipped")
    print(f"recall latency (client, c=1, cache off): p50 {percentile(latencies, 50):.1f} ms, "
          f"p99 {percentile(latencies, 99):.1f} ms; server took_ms p50 {percentile(took, 50):.1f} ms")
    print_tables(per_system, convs)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=str(DATA), help="locomo-dev.json")
    p.add_argument("--conversations", default="", help="comma-separated sample ids (default: all)")
    p.add_argument("--limit-questions", type=int, default=None, help="first N questions per conversation")
    p.add_argument("--systems", default="0.5:0.6,0:0.6,0:0",
                   help="comma-separated diversity:context settings to measure (API default 0.5:0.6)")
    asyncio.run(main(p.parse_args()))
