"""Distillation quality on the hand-labelled episodes of tests/bench/data/distill/ (issue 14).

Runs the same code as the distillation reaction (commands.distill.engine: the rules with the learned
judge, `learned:v1`, and the rules alone, `rules:v1`; the LLM extractor when LLM_ENDPOINT is set) over
each episode of the chosen set and reports, by language:

- fact recall: a labelled fact is recalled when one distilled memory of its episode contains all
  of its key terms (case-insensitive substrings);
- junk rate: distilled memories that match no labelled fact of their episode (contain all the key
  terms of none), over all distilled memories; "of it near": junk memories that carry some key terms
  of a labelled fact (a fact cut short, not chatter);
- the hard rules' skips by reason, and the facts lost to a skip.

Usage: .venv/bin/python tests/bench/distill.py [--split heldout|heldout2|...|heldout6|dev|all] [--show]
Quote the newest held-out set, measured once before anyone reads its errors (README, "Distillation");
the older ones have been looked at since and are tuning data now, like dev. The LLM path is measured only against a
real endpoint (LLM_ENDPOINT, LLM_API_KEY, LLM_MODEL): "LLM path: not measured" otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from commands.distill.engine import distill_by_rules  # noqa: E402
from commands.distill.learned import StatementJudge, StatementModel  # noqa: E402
from projections.models.e5 import E5Encoder  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "distill"


def load(split: str) -> list[dict]:
    """The episodes of `split`: episodes-{zh,en}.json hold alternating dev/heldout halves; the extra files
    (written later by other hands, for tuning) are dev only; episodes-heldout2..6-* are later held-out
    sets, each written by a new hand after the one before it had been measured and looked at."""
    out = []
    for lang in ("zh", "en"):
        for name in (f"episodes-{lang}.json", f"episodes-extra-{lang}.json", f"episodes-extra2-{lang}.json",
                     f"episodes-extra3-{lang}.json", f"episodes-extra4-{lang}.json",
                     f"episodes-extra5-{lang}.json", f"episodes-heldout2-{lang}.json", f"episodes-heldout3-{lang}.json",
                     f"episodes-heldout4-{lang}.json", f"episodes-heldout5-{lang}.json",
                     f"episodes-heldout6-{lang}.json"):
            if not (DATA / name).exists():
                continue
            doc = json.loads((DATA / name).read_text(encoding="utf-8"))
            out += [dict(e, lang=lang) for e in doc["episodes"] if split == "all" or e["split"] == split]
    return out


def matches(memory: str, fact: dict) -> bool:
    low = memory.casefold()
    return all(term.casefold() in low for term in fact["key_terms"])


def touches(memory: str, fact: dict) -> bool:
    """Carries part of the fact (some of its key terms): a junk memory that is a near miss."""
    low = memory.casefold()
    return any(term.casefold() in low for term in fact["key_terms"])


def score(episodes: list[dict], outputs: dict[str, list[str]], skips: dict[str, str], show: bool) -> None:
    stats: dict[str, Counter] = defaultdict(Counter)
    reasons: Counter = Counter()
    for ep in episodes:
        lang = ep["lang"]
        memories = outputs.get(ep["id"], [])
        for key in (lang, "all"):
            s = stats[key]
            s["episodes"] += 1
            s["facts"] += len(ep["facts"])
            s["recalled"] += sum(any(matches(m, f) for m in memories) for f in ep["facts"])
            s["memories"] += len(memories)
            junk = [m for m in memories if not any(matches(m, f) for f in ep["facts"])]
            s["junk"] += len(junk)
            s["near"] += sum(any(touches(m, f) for f in ep["facts"]) for m in junk)
            if ep["id"] in skips:
                s["skipped"] += 1
                s["facts_lost_to_skip"] += len(ep["facts"])
        if ep["id"] in skips:
            reasons[f"{skips[ep['id']]} ({ep['type']})"] += 1
        if show:
            missed = [f["key_terms"] for f in ep["facts"] if not any(matches(m, f) for m in memories)]
            junk = [m for m in memories if not any(matches(m, f) for f in ep["facts"])]
            if missed or junk:
                print(f"--- {ep['id']} [{ep['type']}] skip={skips.get(ep['id'], '')}")
                for k in missed:
                    print(f"  MISSED {k}")
                for m in junk:
                    print(f"  JUNK   {m[:160]}")
    print(f"{'lang':<5} {'episodes':>8} {'facts':>6} {'recall':>7} {'memories':>9} {'junk':>6} {'junk rate':>9} "
          f"{'of it near':>10} {'skipped':>8} {'facts lost to skips':>20}")
    for key in ("zh", "en", "all"):
        s = stats[key]
        recall = s["recalled"] / s["facts"] if s["facts"] else 0.0
        junk = s["junk"] / s["memories"] if s["memories"] else 0.0
        print(f"{key:<5} {s['episodes']:>8} {s['facts']:>6} {recall:>7.1%} {s['memories']:>9} {s['junk']:>6} "
              f"{junk:>9.1%} {s['near']:>10} {s['skipped']:>8} {s['facts_lost_to_skip']:>20}")
    print("skips:", ", ".join(f"{k}: {v}" for k, v in sorted(reasons.items())) or "none")


def run_rules(episodes: list[dict], judge: StatementJudge | None = None) -> tuple[dict[str, list[str]], dict[str, str]]:
    outputs, skips = {}, {}
    for ep in episodes:
        outcome = distill_by_rules(ep["kind"], ep["status"], ep["turns"], judge)
        if outcome.verdict.skip:
            skips[ep["id"]] = outcome.verdict.reason
        outputs[ep["id"]] = [c.content for c in outcome.candidates]
    return outputs, skips


async def run_llm(episodes: list[dict]) -> tuple[dict[str, list[str]], dict[str, str]]:
    from commands.distill.llm_extractor import distill_batch_by_llm
    from commands.llm import ChatClient

    client = ChatClient(os.environ["LLM_ENDPOINT"], os.environ.get("LLM_MODEL", "default"),
                        os.environ.get("LLM_API_KEY"), timeout_s=120)
    outputs, skips = {}, {}
    try:
        passed = []
        for ep in episodes:
            verdict = distill_by_rules(ep["kind"], ep["status"], ep["turns"]).verdict
            if verdict.skip:
                skips[ep["id"]] = verdict.reason
                outputs[ep["id"]] = []
            else:
                passed.append(ep)
        for i in range(0, len(passed), 10):
            batch = passed[i:i + 10]
            results = await distill_batch_by_llm(client, [e["turns"] for e in batch], charge=False)
            for ep, cands in zip(batch, results):
                outputs[ep["id"]] = [c.content for c in cands]
    finally:
        await client.close()
    return outputs, skips


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=("heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "dev",
                                                 "all"), default="heldout6")
    parser.add_argument("--show", action="store_true", help="print each episode's missed facts and junk")
    args = parser.parse_args()
    episodes = load(args.split)
    print(f"distillation benchmark: {len(episodes)} episodes ({args.split}), in process (the reaction's own "
          "code; no Redis)")
    judge = StatementJudge(E5Encoder(), StatementModel.load())
    judge.encoder.warm_up()
    for title, chosen in (("learned:v1 (the default: the rules with the learned judge, multilingual-e5-small)", judge),
                          ("rules:v1 (ZHIYI_DISTILL_EXTRACTOR=rules: the rules alone, no model)", None)):
        started = time.perf_counter()
        outputs, skips = run_rules(episodes, chosen)
        seconds = time.perf_counter() - started
        print(f"\n{title}: {seconds / len(episodes) * 1000:.1f} ms per episode on one core")
        score(episodes, outputs, skips, args.show)
    if os.environ.get("LLM_ENDPOINT"):
        print(f"\nLLM path ({os.environ.get('LLM_MODEL', 'default')} at {os.environ['LLM_ENDPOINT']}):")
        outputs, skips = asyncio.run(run_llm(episodes))
        score(episodes, outputs, skips, args.show)
    else:
        print("\nLLM path: not measured (set LLM_ENDPOINT, LLM_API_KEY, LLM_MODEL to a real model)")


if __name__ == "__main__":
    main()
