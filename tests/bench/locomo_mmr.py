"""What the MMR default (`diversity`) is worth when memories repeat themselves (issue 13 point 4).

LoCoMo dev conversations through the HTTP API, as in locomo.py (one agent per conversation, turns
in order through /batch-commit, cache off), with one change on the tuning conversations
conv-26/30: every evidence turn gets 1 to 3 paraphrased near-duplicates (how many: 1 + crc32 of
"conv/dia" mod 3), committed later in the conversation, the way a speaker repeats something: copy 1
at the end of the evidence turn's session, copy 2 at the end of the next session, copy 3 at the
end of the one after (the conversation's end when there is no such session). The paraphrases are
rule-based and deterministic, on the text after "Speaker: ":

  copy 1  prefix "As I mentioned, " (first letter lowered unless it is "I" or "I'...")
  copy 2  function words swapped through a fixed table (contractions both ways: I'm <-> I am,
          don't <-> do not, it's <-> it is, ...; really -> truly, a lot -> lots, very -> really),
          prefix "To repeat, " when the table changes nothing
  copy 3  clauses reordered: the last sentence first when there are several, else the two halves
          around the first ", " swapped, else prefix "Just to say it again: "

A duplicate stands for its evidence turn: in the top 5 it counts as that turn, once. Measured, for
each diversity in --diversities (context and importance_weight left at the server's defaults):

  distinct@5   distinct evidence turns in the top 5 (a turn and its copies count once), mean
  r@5          distinct@5 / evidence turns of the question (recall@5 with copies counted once)
  dup@5        top-5 slots taken by a copy of a turn already above it (what MMR should prevent)
  multi r@5    r@5 over the questions with two or more evidence turns

on conv-26/30 injected and the same conversations clean (no copies); then recall@5/@10 and MRR on
the held-out conv-41/42/43 without injection. Questions are asked with top_k 5 (what a client that
wants five gets: MMR chooses from max(2 top_k, 20) candidates) and top_k 25 (the README's LoCoMo
protocol), both reported.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/locomo_mmr.py [--diversities 0,0.1,0.2,0.3,0.5,0.7]
        [--limit-questions N]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import re
import tempfile
import time
import zlib
from pathlib import Path

import aiohttp

from _harness import private_redis, zhiyi_process  # noqa: E402  (sys.path set by _harness)
from locomo import ADMIN, DATA, HELD_OUT, TUNE, ingest, load, post, reactions_done, session_of, wait_projected

SWAPS = [("I'm", "I am"), ("I am", "I'm"), ("don't", "do not"), ("do not", "don't"), ("it's", "it is"),
         ("it is", "it's"), ("can't", "cannot"), ("cannot", "can't"), ("I've", "I have"), ("I have", "I've"),
         ("that's", "that is"), ("that is", "that's"), ("didn't", "did not"), ("did not", "didn't"),
         ("really", "truly"), ("a lot", "lots"), ("very", "really"), ("wasn't", "was not"), ("isn't", "is not")]
SWAP_RE = re.compile(r"\b(" + "|".join(re.escape(a) for a, _ in SWAPS) + r")\b")
SWAP_TO = {}
for _a, _b in SWAPS:
    SWAP_TO.setdefault(_a, _b)


def lower_first(text: str) -> str:
    if re.match(r"I\b", text):
        return text
    return text[:1].lower() + text[1:]


def paraphrase(text: str, copy: int) -> str:
    """`text` is "Speaker: words"; copy 1, 2 or 3 as in the module docstring."""
    speaker, _, words = text.partition(": ")
    if copy == 1:
        out = "As I mentioned, " + lower_first(words)
    elif copy == 2:
        out = SWAP_RE.sub(lambda m: SWAP_TO[m.group(1)], words)
        if out == words:
            out = "To repeat, " + lower_first(words)
    else:
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", words.strip()) if s]
        if len(sentences) > 1:
            out = " ".join([sentences[-1]] + sentences[:-1])
        elif ", " in words:
            head, tail = words.split(", ", 1)
            tail = tail.rstrip(".!?")
            out = tail[:1].upper() + tail[1:] + ", " + lower_first(head) + words[-1:] * (words[-1:] in ".!?")
        else:
            out = "Just to say it again: " + lower_first(words)
    return f"{speaker}: {out}"


def inject(turns: list[tuple[str, str]], evidence: set[str], cid: str) -> tuple[list[tuple[str, str]], int]:
    """Turns with the copies placed (dia id of a copy = its evidence turn's); and how many copies."""
    sessions = sorted({session_of(d) for d, _ in turns})
    later: dict[int, list[tuple[str, str]]] = collections.defaultdict(list)   # session -> copies at its end
    text_of = dict(turns)
    n = 0
    for dia in sorted(evidence & set(text_of), key=lambda d: (session_of(d), int(d.split(":")[1]))):
        copies = 1 + zlib.crc32(f"{cid}/{dia}".encode()) % 3
        i = sessions.index(session_of(dia))
        for c in range(1, copies + 1):
            target = sessions[min(i + c - 1, len(sessions) - 1)]
            later[target].append((dia, paraphrase(text_of[dia], c)))
            n += 1
    out: list[tuple[str, str]] = []
    for s in sessions:
        out += [t for t in turns if session_of(t[0]) == s]
        out += later[s]
    return out, n


def measure(ids: list[str], to_dia: dict[str, set[str]], ev: set[str]) -> dict[str, float]:
    seen: set[str] = set()
    dup = 0
    for mid in ids[:5]:
        dias = to_dia.get(mid, set())
        if dias and dias <= seen:
            dup += 1
        seen |= dias
    distinct = len(seen & ev)
    found10 = set().union(*[to_dia.get(m, set()) for m in ids[:10]]) & ev if ids else set()
    mrr = next((1 / r for r, m in enumerate(ids, 1) if to_dia.get(m, set()) & ev), 0.0)
    return {"distinct@5": distinct, "r@5": distinct / len(ev), "dup@5": dup, "r@10": len(found10) / len(ev),
            "mrr": mrr}


async def main(args: argparse.Namespace) -> None:
    data = load(Path(args.data), list(TUNE + HELD_OUT), args.limit_questions)
    diversities = [float(x) for x in args.diversities.split(",")]
    top_ks = [int(x) for x in args.top_k.split(",")]
    corpora: dict[str, tuple[str, list[tuple[str, str]]]] = {}     # name -> (conversation, turns)
    for cid in TUNE:
        evidence = {d for q in data[cid]["qs"] for d in q["ev"]}
        turns, n = inject(data[cid]["turns"], evidence, cid)
        corpora[f"{cid} injected"] = (cid, turns)
        corpora[f"{cid} clean"] = (cid, data[cid]["turns"])
        print(f"{cid}: {len(evidence)} evidence turns, {n} copies injected ({len(turns)} memories)")
    for cid in HELD_OUT:
        corpora[f"{cid} clean"] = (cid, data[cid]["turns"])
    if args.show:
        cid = TUNE[0]
        ev = sorted({d for q in data[cid]["qs"] for d in q["ev"]})[: args.show]
        text_of = dict(data[cid]["turns"])
        for d in ev:
            print(f"  {d}: {text_of.get(d)}")
            for c in (1, 2, 3):
                print(f"     {c}: {paraphrase(text_of[d], c)}" if d in text_of else "")
    # (group, diversity, top_k) -> rows
    rows: dict[tuple[str, float, int], list[dict]] = collections.defaultdict(list)
    with private_redis() as redis_url, tempfile.TemporaryDirectory() as tmp:
        with zhiyi_process("up", redis_url, Path(tmp) / "data", ADMIN) as base:
            async with aiohttp.ClientSession() as s:
                t = time.perf_counter()
                agents = {}
                for name, (cid, turns) in corpora.items():
                    agents[name] = await ingest(s, base, "mmr-" + name.replace(" ", "-"), turns)
                for key, _, last in agents.values():
                    await wait_projected(s, base, key, last)
                print(f"committed and projected {sum(len(t) for _, t in corpora.values()):,} memories in "
                      f"{time.perf_counter() - t:.1f} s; reactions caught up "
                      f"{await reactions_done(redis_url):.1f} s later")
                for name, (cid, _) in corpora.items():
                    key, to_dia, _ = agents[name]
                    group = name.split(" ")[1] + (" tune" if cid in TUNE else " held-out")
                    for q in data[cid]["qs"]:
                        if not q["ev"]:
                            continue
                        ev = set(q["ev"])
                        for k in top_ks:
                            for d in diversities:
                                body = await post(s, f"{base}/api/v1/recall",
                                                  {"query": q["q"], "top_k": k, "diversity": d, "cache": False},
                                                  key, ok=(200,))
                                m = measure([r["memory_id"] for r in body["results"]], to_dia, ev)
                                m["multi"] = len(ev) >= 2
                                rows[(group, d, k)].append(m)
    for k in top_ks:
        for group in ("injected tune", "clean tune", "clean held-out"):
            got = {d: rows[(group, d, k)] for d in diversities if rows[(group, d, k)]}
            if not got:
                continue
            n = len(next(iter(got.values())))
            n_multi = sum(r["multi"] for r in next(iter(got.values())))
            print(f"\n{group} ({', '.join(TUNE if 'tune' in group else HELD_OUT)}), top_k {k}, {n} questions "
                  f"({n_multi} with 2+ evidence turns)")
            print(f"  {'diversity':>9}{'distinct@5':>12}{'r@5':>8}{'dup@5':>8}{'multi r@5':>11}{'r@10':>8}{'mrr':>8}")
            for d, rs in got.items():
                mean = {m: sum(r[m] for r in rs) / len(rs) for m in ("distinct@5", "r@5", "dup@5", "r@10", "mrr")}
                multi = [r["r@5"] for r in rs if r["multi"]]
                r10 = f"{100 * mean['r@10']:8.1f}" if k >= 10 else f"{'':>8}"
                print(f"  {d:9g}{mean['distinct@5']:12.3f}{100 * mean['r@5']:8.1f}{mean['dup@5']:8.3f}"
                      f"{100 * sum(multi) / max(1, len(multi)):11.1f}{r10}{100 * mean['mrr']:8.1f}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=str(DATA), help="locomo-dev.json")
    p.add_argument("--diversities", default="0,0.1,0.2,0.3,0.5,0.7")
    p.add_argument("--top-k", default="5,25", help="comma-separated top_k values to ask with")
    p.add_argument("--limit-questions", type=int, default=None, help="first N questions per conversation")
    p.add_argument("--show", type=int, default=0, help="print the copies of the first N evidence turns of conv-26")
    asyncio.run(main(p.parse_args()))
