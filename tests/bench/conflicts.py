"""Dedup, replacement and conflict detection on the labelled pairs (issue 15), through the real system.

Data: `tests/bench/data/conflicts/*.json`, pairs (a, b) labelled conflict / lookalike / duplicate /
replacement, written by hands that never saw the detector (dev1, dev2: tuning; heldout1, heldout2:
held out). Every pair of every set is loaded into ONE store (`zhiyi up`, a private Redis): all the
older memories (a) first, committed by their agents into `shared` with their source and tier, then,
once projected, all the newer ones (b). Conflicts are read from each commit's response (found
against the whole store, so a detection between memories of two pairs counts as a false positive),
merges from the tombstones (`reason=merged`) once the reactions are done.

- conflict precision: detections whose new memory belongs to the split that pair a labelled
  conflict pair / all such detections; recall: labelled conflict pairs detected / all of them;
- merge precision: merges of the split's memories that join a labelled duplicate or replacement
  pair / all such merges; recall: those pairs merged / all of them.

Memories marked `distilled` are appended as the distillation reaction writes them (a
`memory.committed` with an extractor: checked for conflicts by a reaction, merged under the
distilled scope); the others are committed by their agents (POST /commit: checked at the door,
merged only under the stricter direct-commit rule). Conflicts are read from GET /api/v1/conflicts
(both paths); with `LLM_ENDPOINT` set (the environment reaches the server), the ones the model's
verdict dismissed (`llm:compatible`, `llm:same`) do not count. Merging is turned on (`ZHIYI_MERGE=1`); the pair judge is the shipped
`commands/conflicts/pair_model.json`.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/conflicts.py [--sets dev1,dev2,heldout1,heldout2] [--no-check]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import tempfile
import time
from pathlib import Path

import uuid

import aiohttp

from _harness import private_redis, zhiyi_process  # noqa: E402  (sys.path set by _harness)
from locomo import post, reactions_done, wait_projected

from events.redis.client import connect  # noqa: E402
from events.redis.store import EventStore  # noqa: E402

ADMIN = "bench-admin-key"
DATA = Path(__file__).resolve().parent / "data" / "conflicts"
HELD_OUT = ("heldout1", "heldout2")
MERGE_LABELS = ("duplicate", "replacement")


async def load(s: aiohttp.ClientSession, base: str, keys: dict[str, str], pairs: list[dict], side: str,
               store) -> dict:
    """Commit one side of every pair: an agent's memory through POST /commit, a `distilled` one as the
    distillation reaction writes it (a `memory.committed` with an extractor, appended to the log)."""
    from events.catalogue import MemoryCommitted, new_event
    from events.vocabulary import DECAY_CLASS_BY_CATEGORY

    out = {}
    for p in pairs:
        m = p[side]
        if m.get("distilled"):
            mid = str(uuid.uuid4())
            event = new_event(MemoryCommitted(mid, m["content"], "shared", m["category"],
                                              DECAY_CLASS_BY_CATEGORY[m["category"]], tier=m["tier"],
                                              source=m["source"], extractor="bench:distilled"),
                              ns="shared", agent=m["agent"], by="reaction")
            res = await store.append([event])
            out[p["id"]] = {"memory_id": mid, "position": res.position}
            continue
        body = await post(s, f"{base}/api/v1/commit", {"content": m["content"], "namespace": "shared",
                                                       "source": m["source"], "tier": m["tier"],
                                                       "category": m["category"]}, keys[m["agent"]])
        out[p["id"]] = body
    return out


def report(name: str, pairs: list[dict], ids: dict[str, tuple[str, str]], detections: set[frozenset],
           by_new: dict[str, set[frozenset]], merges: set[frozenset]) -> None:
    mine = {mid for p in pairs for mid in ids[p["id"]]}
    for lang in ("all", "en", "zh", "mixed"):
        sel = [p for p in pairs if lang == "all" or p["lang"] == lang]
        news = {ids[p["id"]][1] for p in sel}
        found = {d for mid in news for d in by_new.get(mid, set())}
        conflict_pairs = {frozenset(ids[p["id"]]) for p in sel if p["label"] == "conflict"}
        tp = len(found & conflict_pairs)
        merge_pairs = {frozenset(ids[p["id"]]) for p in sel if p["label"] in MERGE_LABELS}
        sel_ids = {mid for p in sel for mid in ids[p["id"]]}
        merged = {m for m in merges if m & sel_ids}
        mtp = len(merged & merge_pairs)
        print(f"  {name:10s} {lang:5s} pairs {len(sel):3d} | conflicts: detected {len(found):3d} "
              f"P {tp / max(1, len(found)):.3f} R {tp / max(1, len(conflict_pairs)):.3f} ({tp}/{len(conflict_pairs)}) "
              f"| merges: {len(merged):3d} P {mtp / max(1, len(merged)):.3f} R {mtp / max(1, len(merge_pairs)):.3f} "
              f"({mtp}/{len(merge_pairs)})")
    wrong = collections.Counter(next((p["label"] for p in pairs if frozenset(ids[p["id"]]) == d), "cross-pair")
                                for mid in {ids[p["id"]][1] for p in pairs} for d in by_new.get(mid, set()))
    print(f"  {name:10s} detections by label: {dict(wrong)}; memories {len(mine)}")


async def main(args: argparse.Namespace) -> None:
    sets = {name: json.loads((DATA / f"{name}.json").read_text(encoding="utf-8")) for name in args.sets.split(",")}
    pairs = [p for ps in sets.values() for p in ps]
    agents = sorted({p[side]["agent"] for p in pairs for side in ("a", "b")})
    with private_redis() as redis_url, tempfile.TemporaryDirectory() as tmp:
        env = {"ZHIYI_MERGE": "1", **({"ZHIYI_CONFLICT_CHECK": "0"} if args.no_check else {})}
        with zhiyi_process("up", redis_url, Path(tmp) / "data", ADMIN, env) as base:
            async with aiohttp.ClientSession() as s:
                keys = {a: (await post(s, f"{base}/api/v1/agents/register", {"agent_id": a}, ADMIN))["api_key"]
                        for a in agents}
                store = EventStore(connect(redis_url), origin="bench")
                t = time.perf_counter()
                older = await load(s, base, keys, pairs, "a", store)
                await wait_projected(s, base, keys[agents[0]], max(b["position"] for b in older.values()))
                await reactions_done(redis_url)
                t_b = time.perf_counter()
                newer = await load(s, base, keys, pairs, "b", store)
                commit_s = (time.perf_counter() - t_b) / len(pairs)
                await wait_projected(s, base, keys[agents[0]], max(b["position"] for b in newer.values()))
                await reactions_done(redis_url)
                stones = await (await s.get(f"{base}/api/v1/admin/tombstones",
                                            params={"reason": "merged", "limit": "1000"},
                                            headers={"X-API-Key": ADMIN})).json()
                listed = await (await s.get(f"{base}/api/v1/conflicts", params={"status": "all", "limit": "1000"},
                                            headers={"X-API-Key": ADMIN})).json()
                await store.redis.aclose()
                print(f"loaded {len(pairs)} pairs ({2 * len(pairs)} memories, {len(sets)} sets) into one store in "
                      f"{time.perf_counter() - t:.1f} s; {commit_s * 1000:.1f} ms per newer memory "
                      f"(HTTP commits with the conflict check, and appended distilled ones)")
    ids = {pid: (older[pid]["memory_id"], newer[pid]["memory_id"]) for pid in older}
    by_new: dict[str, set[frozenset]] = collections.defaultdict(set)
    dismissed = 0
    for c in listed["conflicts"]:   # memory_ids: (the memory committed last, the stored one)
        if (c["resolution"] or {}).get("rule") in ("llm:compatible", "llm:same"):
            dismissed += 1          # the LLM's verdict: a false alarm (LLM_ENDPOINT set when the bench ran)
            continue
        by_new[c["memory_ids"][0]].add(frozenset(c["memory_ids"]))
    detections = {d for ds in by_new.values() for d in ds}
    merges = {frozenset((t["original_id"], t["merged_into"])) for t in stones["tombstones"]}
    print(f"conflicts reported: {len(detections)} ({dismissed} more dismissed by the LLM's verdict); "
          f"merges made: {len(merges)}")
    for name, ps in sets.items():
        report(name, ps, ids, detections, by_new, merges)
    held = [p for name in HELD_OUT if name in sets for p in sets[name]]
    if held:
        report("held-out", held, ids, detections, by_new, merges)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="dev1,dev2,heldout1,heldout2")
    ap.add_argument("--no-check", action="store_true",
                    help="ZHIYI_CONFLICT_CHECK=0: what a commit costs without the check (no conflicts are found)")
    asyncio.run(main(ap.parse_args()))
