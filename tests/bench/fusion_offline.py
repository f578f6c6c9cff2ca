"""The recall fusion and MMR, in process: an ablation of their parts in one run (issue 13).

No server: the memories are embedded with the default model (USE multilingual v3) and indexed
with the serving BM25 (`projections.serving.bm25`, the projector's terms) in this process, then
every question is fused exactly as recall fuses (`projections.queries.recall.fusion.fuse`: dense
top 50, BM25 top 50, per-term reading, the cross-script ids among the 20 best dense candidates).
Left out, so figures differ from the API's by a query or two: context neighbours, standing
(`importance_weight`), the recall-count boost. Use it to see what each part is worth and to tune;
quote the API benches (bilingual.py, locomo.py, locomo_mmr.py) for the product's figures.

Fusion, diversity 0, context 0 (top-1 of 80 on bilingual-dev, cross-lingual of 24, per kind; LoCoMo
recall@5 on the tuning conv-26/30 and the held-out conv-41/42/43, MRR held-out), for:

  before         the fusion at bdeef4c: a text is Chinese when CJK letters are 80% of its letters
  + script       a Latin word counts as two CJK characters, 70% (a Chinese note naming tools is Chinese)
  + lead         the dense leader's floor, ungated (lead 0.02 -> 0.06 of cosine over the runner-up)
  + lead gate    the floor scaled by (1 - best rival lexical evidence) (318a9f6)
  + lead ramp    the floor whole while the best rival lexical evidence is <= 0.25, nil from 0.4 (b58da3b)
  + pair         the best two dense candidates too, by the second's lead over the third (DEFAULT)

Calibration (--calibrate): the share of questions whose top hit is right that score at least
`min_score` (MIN_SCORE_DEFAULTS), and of off-topic questions (bilingual.OFF_TOPIC) that score below
it, against each LoCoMo conversation and bilingual-dev.

MMR (--mmr): LoCoMo conv-26/30 with 1-3 paraphrased copies of each evidence turn injected
(locomo_mmr.inject), top 25 of the 50 fused candidates (relevance min-max scaled, as recall does):
distinct evidence turns in the top 5, duplicate slots, recall@5; clean conv-26/30 and held-out
recall@5, for no MMR, textbook MMR (floor 0) and the redundancy floor, at each --diversities.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/fusion_offline.py [--calibrate] [--mmr]
        [--diversities 0.3,0.5]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from _harness import ROOT  # noqa: F401  (sets sys.path)
from locomo import DATA as LOCOMO, HELD_OUT, TUNE, load
from locomo_mmr import inject

import projections.queries.recall.fusion as fusion
from projections.queries.recall.mmr import REDUNDANCY_FLOOR, mmr
from projections.serving.bm25 import LexicalIndex
from projections.text.lexical import index_text, query_text, terms

BILINGUAL = ROOT.parent / "shared" / "eval" / "bilingual-dev.json"
POOL = 50
BLIND_TOP = 20


@dataclasses.dataclass
class Corpus:
    texts: list[str]
    vectors: np.ndarray
    index: LexicalIndex

    @classmethod
    def of(cls, texts: list[str], embed: Callable[[list[str]], np.ndarray]) -> "Corpus":
        index = LexicalIndex()
        for slot, text in enumerate(texts):
            index.add(slot, terms(index_text(text)))
        return cls(texts, embed(texts), index)

    def fused(self, question: str, qvec: np.ndarray, params: fusion.FusionParams) -> list[tuple[int, float]]:
        cos = self.vectors @ qvec
        dense = [(str(j), float(cos[j])) for j in np.argsort(-cos, kind="stable")[:POOL]]
        qterms = terms(query_text(question))
        bm25 = self.index.scores(qterms)
        lexical = []
        if bm25 is not None:
            bm25 = bm25[: len(self.texts)]
            lexical = [(str(j), float(bm25[j])) for j in np.argsort(-bm25, kind="stable")[:POOL] if bm25[j] > 0]
        script = fusion.script_of(question)
        blind = {m for m, _ in dense[:BLIND_TOP] if fusion.lexically_blind(script, self.texts[int(m)])} \
            if lexical else set()
        out = fusion.fuse(dense, lexical, params=params, query_terms=max(1, len(qterms)) if lexical else 1,
                          blind=blind)
        return [(int(m), s) for m, s in out]


@contextmanager
def letter_script(on: bool) -> Iterator[None]:
    """script_of as at bdeef4c: CJK letters against Latin letters, 80%."""
    saved = fusion.script_of

    def old(text: str) -> str:
        cjk = len(fusion._CJK.findall(text))
        latin = len([c for c in text if "a" <= c.lower() <= "z"])
        if cjk + latin == 0:
            return ""
        share = cjk / (cjk + latin)
        return "zh" if share >= 0.8 else "en" if share <= 0.2 else "mixed"

    if on:
        fusion.script_of = old
    try:
        yield
    finally:
        fusion.script_of = saved


@contextmanager
def single_leader(on: bool) -> Iterator[None]:
    """dense_leads with the favourite alone (no favourite pair), as at 318a9f6-d8cfe1d."""
    saved = fusion.dense_leads

    def top_one(cos: dict[str, float]) -> dict[str, float]:
        first = sorted(cos.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
        return {first[0][0]: first[0][1] - first[1][1]} if len(first) > 1 else {}

    if on:
        fusion.dense_leads = top_one
    try:
        yield
    finally:
        fusion.dense_leads = saved


def bilingual(data: dict, corpus: Corpus, qvecs: np.ndarray, params: fusion.FusionParams) -> dict[str, int]:
    ids = [m["id"] for m in data["memories"]]
    out: dict[str, int] = {}
    for q, qvec in zip(data["queries"], qvecs):
        top = corpus.fused(q["query"], qvec, params)[0][0]
        out[q["kind"]] = out.get(q["kind"], 0) + int(ids[top] in q["expected"])
    out["cross"] = out.get("en-zh", 0) + out.get("zh-en", 0)
    out["all"] = sum(v for k, v in out.items() if k != "cross")
    return out


def locomo(convs: dict, corpora: dict, params: fusion.FusionParams, pick: Callable | None = None) -> dict[str, float]:
    """recall@5 (tune, held-out) and held-out MRR; `pick(fused, corpus)` reorders (MMR)."""
    r5: dict[str, list[float]] = {"tune": [], "held": []}
    mrr: list[float] = []
    for cid, (corpus, dias, qvecs) in corpora.items():
        for q, qvec in zip(convs[cid]["qs"], qvecs):
            if not q["ev"]:
                continue
            fused = corpus.fused(q["q"], qvec, params)
            ranked = pick(fused, corpus) if pick is not None else [j for j, _ in fused]
            ev = set(q["ev"])
            r5["tune" if cid in TUNE else "held"].append(len({dias[j] for j in ranked[:5]} & ev) / len(ev))
            if cid in HELD_OUT:
                mrr.append(next((1 / r for r, j in enumerate(ranked[:25], 1) if dias[j] in ev), 0.0))
    return {"tune r@5": 100 * float(np.mean(r5["tune"])), "held r@5": 100 * float(np.mean(r5["held"])),
            "held mrr": 100 * float(np.mean(mrr))}


def mmr_pick(diversity: float, floor: float) -> Callable:
    def pick(fused: list[tuple[int, float]], corpus: Corpus) -> list[int]:
        head = fused[:POOL]
        rel = np.array([s for _, s in head])
        span = rel.max() - rel.min()
        rel = (rel - rel.min()) / span if span > 0 else np.ones_like(rel)
        ids = [j for j, _ in head]
        if diversity == 0:
            return ids[:25]
        return [ids[i] for i in mmr(rel, corpus.vectors[ids], 25, diversity, redundancy_floor=floor)]
    return pick


def injected(convs: dict, embed: Callable, params: fusion.FusionParams, pick: Callable) -> dict[str, float]:
    distinct, dup, r5 = [], [], []
    for cid in TUNE:
        evidence = {d for q in convs[cid]["qs"] for d in q["ev"]}
        turns, _ = inject(convs[cid]["turns"], evidence, cid)
        corpus = Corpus.of([t for _, t in turns], embed)
        dias = [d for d, _ in turns]
        qs = [q for q in convs[cid]["qs"] if q["ev"]]
        for q, qvec in zip(qs, embed([q["q"] for q in qs])):
            top = pick(corpus.fused(q["q"], qvec, params), corpus)[:5]
            seen: set[str] = set()
            dups = 0
            for j in top:
                dups += dias[j] in seen
                seen.add(dias[j])
            ev = set(q["ev"])
            distinct.append(len(seen & ev))
            dup.append(dups)
            r5.append(len(seen & ev) / len(ev))
    return {"distinct@5": float(np.mean(distinct)), "dup@5": float(np.mean(dup)), "r@5": 100 * float(np.mean(r5))}


def calibrate(data: dict, bi: Corpus, bi_q: np.ndarray, convs: dict, corpora: dict, embed: Callable) -> None:
    from bilingual import OFF_TOPIC

    floor = fusion.MIN_SCORE_DEFAULTS["use-multilingual-v3"]
    off_vecs = embed(list(OFF_TOPIC))
    print(f"\nmin_score {floor} (DEFAULT fusion, context 0): right top hits kept, off-topic questions dropped;"
          " score percentiles p05/p50/p95")
    ids = [m["id"] for m in data["memories"]]
    rows = [("bilingual-dev", bi, [(q["query"], v, lambda j, q=q: ids[j] in q["expected"])
                                  for q, v in zip(data["queries"], bi_q)])]
    for cid, (corpus, dias, qvecs) in corpora.items():
        rows.append((cid, corpus, [(q["q"], v, lambda j, q=q, dias=dias: dias[j] in set(q["ev"]))
                                   for q, v in zip(convs[cid]["qs"], qvecs)]))
    for name, corpus, asked in rows:
        right = []
        for text, vec, is_right in asked:
            j, score = corpus.fused(text, vec, fusion.DEFAULT)[0]
            if is_right(j):
                right.append(score)
        off = [corpus.fused(text, vec, fusion.DEFAULT)[0][1] for text, vec in zip(OFF_TOPIC, off_vecs)]
        kept = np.mean([s >= floor for s in right])
        dropped = np.mean([s < floor for s in off])
        pr, po = np.percentile(right, [5, 50, 95]), np.percentile(off, [5, 50, 95])
        print(f"  {name:<14} right top-1 {len(right):>4}: kept {100 * kept:5.1f}%  ({pr[0]:.2f}/{pr[1]:.2f}/{pr[2]:.2f})"
              f"   off-topic {len(off)}: dropped {100 * dropped:5.1f}%  ({po[0]:.2f}/{po[1]:.2f}/{po[2]:.2f})")


def main(args: argparse.Namespace) -> None:
    from projections.models.use_embedder import LocalUSEEmbedder

    model = LocalUSEEmbedder(threads=1)
    data = json.loads(Path(args.bilingual).read_text())
    bi = Corpus.of([m["content"] for m in data["memories"]], model.embed)
    bi_q = model.embed([q["query"] for q in data["queries"]])
    convs = load(Path(args.locomo), list(TUNE + HELD_OUT), None)
    corpora = {}
    for cid, conv in convs.items():
        corpus = Corpus.of([t for _, t in conv["turns"]], model.embed)
        corpora[cid] = (corpus, [d for d, _ in conv["turns"]], model.embed([q["q"] for q in conv["qs"] if q["ev"]]))
    for cid in convs:
        convs[cid]["qs"] = [q for q in convs[cid]["qs"] if q["ev"]]

    default = fusion.DEFAULT
    no_lead = dataclasses.replace(default, lead_low=0.98, lead_high=0.99)   # a lead no cosine reaches
    steps = [("before (bdeef4c)", no_lead, {"script": True}), ("+ script", no_lead, {}),
             ("+ lead", dataclasses.replace(default, lead_rival_low=1.0, lead_rival_high=2.0), {"single": True}),
             ("+ lead gate (x 1 - l_rival)", dataclasses.replace(default, lead_rival_low=0.0, lead_rival_high=1.0),
              {"single": True}),
             ("+ lead ramp", default, {"single": True}),
             ("+ favourite pair (DEFAULT)", default, {})]
    kinds = ("en-en", "en-en-paraphrase", "zh-zh", "zh-zh-paraphrase", "en-zh", "zh-en", "mixed")
    print("fusion, diversity 0, context 0: bilingual-dev top-1 (of 80; cross-lingual of 24; per kind), LoCoMo")
    print(f"  {'step':<30}{'all':>5}{'cross':>7}  " + " ".join(f"{k[:8]:>8}" for k in kinds)
          + f"{'tune r@5':>10}{'held r@5':>10}{'held mrr':>10}")
    for name, params, flags in steps:
        with letter_script(flags.get("script", False)), single_leader(flags.get("single", False)):
            b, lo = bilingual(data, bi, bi_q, params), locomo(convs, corpora, params)
        print(f"  {name:<30}{b['all']:>5}{b['cross']:>7}  " + " ".join(f"{b.get(k, 0):>8}" for k in kinds)
              + f"{lo['tune r@5']:>10.1f}{lo['held r@5']:>10.1f}{lo['held mrr']:>10.1f}")
    if args.calibrate:
        calibrate(data, bi, bi_q, convs, corpora, model.embed)
    if not args.mmr:
        return
    print("\nMMR over the DEFAULT fusion, context 0, top 25 of 50: injected conv-26/30 (distinct@5, dup@5, r@5),"
          " clean recall@5")
    print(f"  {'setting':<30}{'distinct@5':>11}{'dup@5':>7}{'inj r@5':>9}{'tune r@5':>10}{'held r@5':>10}")
    settings = [("no MMR", 0.0, 0.0)]
    for d in (float(x) for x in args.diversities.split(",")):
        settings += [(f"textbook, diversity {d}", d, 0.0), (f"floor {REDUNDANCY_FLOOR}, diversity {d}", d,
                                                             REDUNDANCY_FLOOR)]
    for name, diversity, floor in settings:
        pick = mmr_pick(diversity, floor)
        inj = injected(convs, model.embed, default, pick)
        lo = locomo(convs, corpora, default, pick)
        print(f"  {name:<30}{inj['distinct@5']:>11.3f}{inj['dup@5']:>7.2f}{inj['r@5']:>9.1f}"
              f"{lo['tune r@5']:>10.1f}{lo['held r@5']:>10.1f}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bilingual", default=str(BILINGUAL))
    p.add_argument("--locomo", default=str(LOCOMO))
    p.add_argument("--calibrate", action="store_true", help="also the min_score calibration")
    p.add_argument("--mmr", action="store_true", help="also the MMR ablation (slower: embeds the injected copies)")
    p.add_argument("--diversities", default="0.5", help="comma-separated diversities for --mmr")
    main(p.parse_args())
