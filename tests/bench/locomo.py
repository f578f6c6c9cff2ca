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
ranks by relevance alone). A field given as `-` is left out of the request, so the server's
default applies: `-:-` is "the defaults", `-:0` "the defaults with context 0".

Order robustness (issue 13): `--layouts a,b,c,d,e` measures every system under each commit layout
and prints one table (r@5/10/25/MRR, and recall latency p50/p95 over HTTP, c=1, cache off):

  a  per-conversation   one agent (namespace) per conversation, turns in order (the default run)
  b  in-order           ONE agent, all conversations in one namespace, conversation after conversation
  c  round-robin        ONE agent, one turn of each conversation in turn
  d  shuffled           ONE agent, all turns in a shuffled order (seed `--seed`, default 13)
  e  round-robin-episodes  as c, every commit with derived_from = "<conversation>:session_<n>"

Each layout has its own agent(s) in the same server. In b-e every question (of every conversation)
is asked with the one agent's key, so it searches the namespace that holds all conversations.
Without `--layouts` the script runs today's single layout (a) as before. Latency: the systems take
turns going first on each question; the gateway keeps query vectors in an in-memory LRU, so from the
second layout on (the same questions again) the figures are search + HTTP without the query's
embedding (about 3 ms with the local model), in both systems alike.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/locomo.py --layouts a,b,c,d,e --systems=-:-,-:0
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import math
import random
import re
import tempfile
import time
from pathlib import Path

import aiohttp

from _harness import merged_into, percentile, private_redis, zhiyi_process  # noqa: E402  (sys.path set by _harness)

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


async def ingest(s: aiohttp.ClientSession, base: str, agent: str,
                 turns: list[tuple[str, str]]) -> tuple[str, dict, int]:
    """Register `agent` and batch-commit `turns` (dia_id, text) as its memories; returns its key,
    memory id -> dia_ids, and the last position."""
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


async def ask(s, base, key, question: str, system: tuple[float | None, float | None, float | None],
              latencies: list[float], took: list[float]) -> list[str]:
    body = {"query": question, "top_k": 25, "cache": False}
    for name, value in zip(("diversity", "context", "importance_weight"), system):
        if value is not None:                # None: left out, the server's default applies
            body[name] = value
    t = time.perf_counter()
    reply = await post(s, f"{base}/api/v1/recall", body, key, ok=(200,))
    latencies.append((time.perf_counter() - t) * 1000)
    took.append(reply["took_ms"])
    return [r["memory_id"] for r in reply["results"]]


def _system(spec: str) -> tuple[float | None, float | None, float | None]:
    """diversity:context[:importance_weight]; `-` leaves a field out (the server's default). Two fields
    given as numbers keep the old meaning: importance_weight then defaults to 0.2 as before."""
    parts: list[float | None] = [None if x.strip() == "-" else float(x) for x in spec.split(":")]
    if len(parts) == 2:
        parts.append(0.2 if parts[0] is not None and parts[1] is not None else None)
    return (parts[0], parts[1], parts[2])


def _label(sc: tuple[float | None, float | None, float | None]) -> str:
    if sc == (None, None, None):
        return "zhiyi defaults"
    names = ("diversity", "context", "importance_weight")
    given = [f"{n}={v:g}" for n, v in zip(names, sc) if v is not None]
    if None in sc:
        return "zhiyi defaults, " + " ".join(given)
    return "zhiyi " + " ".join(given)


async def main(args: argparse.Namespace) -> None:
    if args.layouts:
        await main_layouts(args)
        return
    wanted = [c.strip() for c in args.conversations.split(",")] if args.conversations else None
    data = load(Path(args.data), wanted, args.limit_questions)
    convs = list(data)
    systems = [_system(spec) for spec in args.systems.split(",")]
    label = {sc: _label(sc) for sc in systems}
    per_system: dict[str, list] = {label[sc]: [] for sc in systems}
    per_system["plain BM25"] = []
    latencies: list[float] = []
    took: list[float] = []
    skipped = 0
    with private_redis() as redis_url, tempfile.TemporaryDirectory() as tmp:
        with zhiyi_process("up", redis_url, Path(tmp) / "data", ADMIN,
                           {"ZHIYI_MERGE": "1"} if args.merge else None) as base:
            async with aiohttp.ClientSession() as s:
                started = time.perf_counter()
                agents = {cid: await ingest(s, base, f"locomo-{cid}", data[cid]["turns"]) for cid in convs}
                for key, _, last in agents.values():
                    await wait_projected(s, base, key, last)
                n_turns = sum(len(data[c]["turns"]) for c in convs)
                print(f"committed and projected {n_turns:,} turns of {len(convs)} conversations "
                      f"in {time.perf_counter() - started:.1f} s; reactions caught up "
                      f"{await reactions_done(redis_url):.1f} s later")
                merged = await merged_into(s, base, ADMIN)
                for _, to_dia_of, _ in agents.values():  # a merged turn's survivor stands for it
                    for mid, survivor in merged.items():
                        if mid in to_dia_of:
                            to_dia_of[survivor] |= to_dia_of[mid]
                print(f"merging {'on (ZHIYI_MERGE=1)' if args.merge else 'off (the default)'}: {len(merged)} "
                      "memories merged")
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


# ---- order robustness: commit layouts -----------------------------------------------------------

LAYOUTS = {"a": "per-conversation", "b": "in-order", "c": "round-robin", "d": "shuffled",
           "e": "round-robin-episodes"}


def session_of(dia: str) -> int:
    return int(re.match(r"D(\d+):", dia).group(1))


def layout_order(layout: str, data: dict[str, dict], seed: int) -> list[tuple[str, str, str, str | None]]:
    """(conversation, dia_id, text, derived_from or None) in the order one agent commits them (b-e)."""
    per_conv = [[(cid, dia, text) for dia, text in data[cid]["turns"]] for cid in data]
    if layout == "b":
        order = [t for turns in per_conv for t in turns]
    elif layout in ("c", "e"):
        order = [turns[i] for i in range(max(len(t) for t in per_conv)) for turns in per_conv if i < len(turns)]
    elif layout == "d":
        order = [t for turns in per_conv for t in turns]
        random.Random(seed).shuffle(order)
    else:
        raise ValueError(layout)
    return [(cid, dia, text, f"{cid}:session_{session_of(dia)}" if layout == "e" else None)
            for cid, dia, text in order]


async def ingest_one_namespace(s: aiohttp.ClientSession, base: str, agent: str,
                               order: list[tuple[str, str, str, str | None]]) -> tuple[str, dict, int]:
    """One agent commits every turn in `order` through /batch-commit (1,000 a batch, order kept);
    memory id -> {"conv/dia"}."""
    key = (await post(s, f"{base}/api/v1/agents/register", {"agent_id": agent}, ADMIN))["api_key"]
    to_key: dict[str, set[str]] = collections.defaultdict(set)
    last = 0
    for start in range(0, len(order), 1000):
        chunk = order[start:start + 1000]
        entries = [{"content": text, "tags": ["locomo"], **({"derived_from": ep} if ep else {})}
                   for _, _, text, ep in chunk]
        body = await post(s, f"{base}/api/v1/batch-commit", {"entries": entries}, key)
        for (cid, dia, _, _), res in zip(chunk, body["results"], strict=True):
            to_key[res["memory_id"]].add(f"{cid}/{dia}")
        last = body["position"]
    return key, to_key, last


def print_layout_table(rows: dict[tuple[str, str], list[tuple[str, int, dict]]],
                       lat: dict[tuple[str, str], list[float]], convs: list[str]) -> None:
    metrics = [f"r@{k}" for k in KS] + ["mrr"]
    groups = [(f"all ({len(convs)}: {', '.join(convs)})", convs),
              (f"held-out ({', '.join(c for c in HELD_OUT if c in convs)})", [c for c in HELD_OUT if c in convs]),
              (f"tune ({', '.join(c for c in TUNE if c in convs)})", [c for c in TUNE if c in convs])]
    width = max(len(system) for _, system in rows) + 2
    for i, (title, members) in enumerate(groups):
        if not members or (i > 0 and members == convs):
            continue
        print(f"\n{title}")
        print(f"  {'layout':24}{'system':{width}}" + "".join(f"{m:>7}" for m in metrics) + f"{'n':>6}"
              + (f"{'p50 ms':>9}{'p95 ms':>9}" if members == convs else ""))
        for (layout, system), got in rows.items():
            sel = [sc for cid, _, sc in got if cid in members]
            if not sel:
                continue
            row = mean_row(sel)
            line = f"  {layout:24}{system:{width}}" + "".join(f"{row[m]:7.1f}" for m in metrics) + f"{len(sel):6d}"
            if members == convs and (layout, system) in lat:
                v = lat[(layout, system)]
                line += f"{percentile(v, 50):9.1f}{percentile(v, 95):9.1f}"
            print(line)


def print_latency(lat: dict[tuple[str, str], list[float]], systems: list[str]) -> None:
    """Recall latency over HTTP (client side, c=1, cache off), each system beside the first one
    with context 0 (ratio of p50 and p95)."""
    base = next((name for name in systems if "context=0" in name), None)
    print(f"\nrecall latency over HTTP, client side, c=1, cache off (ratio against '{base}')")
    print(f"  {'layout':24}{'system':34}{'n':>6}{'p50 ms':>9}{'p95 ms':>9}{'p50 x':>8}{'p95 x':>8}")
    layouts = list(dict.fromkeys(layout for layout, _ in lat))
    for layout in layouts:
        ref = lat.get((layout, base)) if base else None
        for name in systems:
            v = lat.get((layout, name))
            if not v:
                continue
            p50, p95 = percentile(v, 50), percentile(v, 95)
            ratio = (f"{p50 / percentile(ref, 50):8.2f}{p95 / percentile(ref, 95):8.2f}" if ref else "")
            print(f"  {layout:24}{name:34}{len(v):6d}{p50:9.1f}{p95:9.1f}{ratio}")


async def main_layouts(args: argparse.Namespace) -> None:
    wanted = [c.strip() for c in args.conversations.split(",")] if args.conversations else None
    data = load(Path(args.data), wanted, args.limit_questions)
    convs = list(data)
    layouts = [x.strip() for x in args.layouts.split(",")]
    by_name = {v: k for k, v in LAYOUTS.items()}
    layouts = [by_name.get(x, x) for x in layouts]
    for x in layouts:
        if x not in LAYOUTS:
            raise SystemExit(f"unknown layout {x!r}: one of {', '.join(f'{k} ({v})' for k, v in LAYOUTS.items())}")
    systems = [_system(spec) for spec in args.systems.split(",")]
    label = {sc: _label(sc) for sc in systems}
    rows: dict[tuple[str, str], list] = {}
    lat: dict[tuple[str, str], list[float]] = {}
    with private_redis() as redis_url, tempfile.TemporaryDirectory() as tmp:
        with zhiyi_process("up", redis_url, Path(tmp) / "data", ADMIN) as base:
            async with aiohttp.ClientSession() as s:
                # ingest every layout first (each in its own agent), then ask: the recalls of every
                # layout are timed against the same server state
                keys: dict[str, dict[str, tuple[str, dict]]] = {}
                started = time.perf_counter()
                for layout in layouts:
                    t = time.perf_counter()
                    if layout == "a":
                        keys[layout] = {}
                        for cid in convs:
                            key, to_dia, last = await ingest(s, base, f"locomo-{cid}", data[cid]["turns"])
                            await wait_projected(s, base, key, last)
                            keys[layout][cid] = (key, {m: {f"{cid}/{d}" for d in ds} for m, ds in to_dia.items()})
                    else:
                        try:
                            key, to_key, last = await ingest_one_namespace(
                                s, base, f"locomo-{LAYOUTS[layout]}", layout_order(layout, data, args.seed))
                        except RuntimeError as exc:
                            print(f"layout {layout} ({LAYOUTS[layout]}) skipped: {str(exc)[:300]}")
                            continue
                        await wait_projected(s, base, key, last)
                        keys[layout] = {cid: (key, to_key) for cid in convs}
                    print(f"layout {layout} ({LAYOUTS[layout]}): committed and projected in "
                          f"{time.perf_counter() - t:.1f} s")
                n_turns = sum(len(data[c]["turns"]) for c in convs)
                print(f"{n_turns:,} turns of {len(convs)} conversations x {len(keys)} layouts in "
                      f"{time.perf_counter() - started:.1f} s; reactions caught up "
                      f"{await reactions_done(redis_url):.1f} s later")
                for q in [q for cid in convs for q in data[cid]["qs"]][:20]:   # warm-up, not timed
                    await ask(s, base, next(iter(keys[next(iter(keys))].values()))[0], q["q"], systems[0], [], [])
                started = time.perf_counter()
                n = 0
                for layout in keys:
                    name = f"{layout} {LAYOUTS[layout]}"
                    for sc in systems:
                        rows[(name, label[sc])] = []
                        lat[(name, label[sc])] = []
                    bm25_name = (name, "plain BM25")
                    rows[bm25_name] = []
                    if layout == "a":
                        bm25s = {cid: PlainBM25([(f"{cid}/{d}", t) for d, t in data[cid]["turns"]]) for cid in convs}
                    else:
                        one = PlainBM25([(f"{cid}/{d}", t) for cid in convs for d, t in data[cid]["turns"]])
                        bm25s = {cid: one for cid in convs}
                    for cid in convs:
                        key, to_key = keys[layout][cid]
                        for q in data[cid]["qs"]:
                            if not q["ev"]:
                                continue
                            ev = [f"{cid}/{d}" for d in q["ev"]]
                            n_asked = len(rows[bm25_name])   # alternate which system goes first, so
                            turn = systems if n_asked % 2 == 0 else systems[::-1]  # neither always pays
                            for sc in turn:                     # the query's embedding (LRU) alone
                                ids = await ask(s, base, key, q["q"], sc, lat[(name, label[sc])], [])
                                n += 1
                                ranked = [to_key.get(mid, set()) for mid in ids]
                                rows[(name, label[sc])].append((cid, q["cat"], question_scores(ranked, ev)))
                            ranked = [{k} for k in bm25s[cid].search(q["q"], 25)]
                            rows[bm25_name].append((cid, q["cat"], question_scores(ranked, ev)))
                print(f"asked {n:,} recalls in {time.perf_counter() - started:.1f} s")
    print_layout_table(rows, lat, convs)
    print_latency(lat, [label[sc] for sc in systems])


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=str(DATA), help="locomo-dev.json")
    p.add_argument("--conversations", default="", help="comma-separated sample ids (default: all)")
    p.add_argument("--limit-questions", type=int, default=None, help="first N questions per conversation")
    p.add_argument("--systems", default=None,
                   help="comma-separated diversity:context[:importance_weight] settings to measure, '-' = the "
                        "server's default (without --layouts: 0.5:0.6,0:0.6,0:0; with: -:-,-:0)")
    p.add_argument("--layouts", default="",
                   help="comma-separated commit layouts a-e (or their names); default: today's single run")
    p.add_argument("--seed", type=int, default=13, help="the shuffled layout's seed")
    p.add_argument("--merge", action="store_true", help="run with ZHIYI_MERGE=1 (merged ids count through "
                                                        "their survivors)")
    ns = p.parse_args()
    if ns.systems is None:
        ns.systems = "-:-,-:0" if ns.layouts else "0.5:0.6,0:0.6,0:0"
    asyncio.run(main(ns))
