"""Consolidation figures on synthetic histories whose answer is known (no Redis, no model).

bench_calibration: for each decay class, recall uses drawn as a Poisson process of intensity
    r0 · exp(-λ_true · age) per day (memories born uniformly over the last 360 days, a 180-day
    window), with λ_true inside the ±50% band for three classes, above it for one and below it for
    one; `calibrate` should find λ_true (or its clamp). Then how the error shrinks with the number
    of uses (one class, 40 histories per size), and the time for ~10k memories and ~50k uses.
bench_patterns: 200 synthetic topic clusters with planted patterns (≥3 memories of one category
    in one namespace) and decoys (mixed namespaces, too few members, pattern memories that must
    not count); `mine_patterns` should find exactly the planted ones (precision = recall = 1.0),
    and nothing more when run again with its own plans as `existing`. Then timing.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/consolidation_synthetic.py [--seed 0]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from commands.consolidation.calibration import MemorySample, Use, calibrate  # noqa: E402
from commands.consolidation.patterns import PatternMember, PatternPlan, mine_patterns  # noqa: E402
from events.vocabulary import DECAY_RATE_PER_DAY  # noqa: E402

DAY = 86_400_000
NOW = 1_750_000_000_000
WINDOW_DAYS = 180
BORN_SPAN_DAYS = 360
TRUE_FACTOR = {"system_fact": 1.2, "user_pref": 0.8, "proj_context": 1.4, "tool_usage": 2.5, "code_snippet": 0.3}


# ---- calibration --------------------------------------------------------------------------------

def _exposure_integral(lam: float, a0: np.ndarray, a1: np.ndarray) -> np.ndarray:
    return (np.exp(-lam * a0) - np.exp(-lam * a1)) / lam if lam > 0 else a1 - a0


def history(rng: np.random.Generator, cls: str, lam: float, n: int, *, uses: float | None = None,
            r0: float = 0.1) -> tuple[list[MemorySample], list[Use]]:
    """`n` memories of `cls` and their uses in the window (intensity r0·exp(-lam·age) per day;
    r0 is set so that about `uses` uses are expected, when given)."""
    born_ago = rng.uniform(0.0, BORN_SPAN_DAYS, n)
    a0, a1 = np.maximum(0.0, born_ago - WINDOW_DAYS), born_ago
    per_r0 = _exposure_integral(lam, a0, a1)
    if uses is not None:
        r0 = uses / float(per_r0.sum())
    counts = rng.poisson(r0 * per_r0)
    owner = np.repeat(np.arange(n), counts)
    u = rng.uniform(0.0, 1.0, owner.size)
    if lam > 0:
        e0, e1 = np.exp(-lam * a0[owner]), np.exp(-lam * a1[owner])
        ages = -np.log(e0 - u * (e0 - e1)) / lam
    else:
        ages = a0[owner] + u * (a1[owner] - a0[owner])
    born = NOW - (born_ago * DAY).astype(np.int64)
    mems = [MemorySample(f"{cls}-{i}", cls, int(b)) for i, b in enumerate(born)]
    at = np.minimum(NOW, born[owner] + (ages * DAY).astype(np.int64))
    return mems, [Use(f"{cls}-{i}", int(t)) for i, t in zip(owner, at, strict=True)]


def _median_seconds(fn: Callable[[], object], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bench_calibration(seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    mems: list[MemorySample] = []
    uses: list[Use] = []
    truth = {c: f * DECAY_RATE_PER_DAY[c] for c, f in TRUE_FACTOR.items()}
    for cls, lam in truth.items():
        m, u = history(rng, cls, lam, 1000, uses=3000)
        mems += m
        uses += u
    start = NOW - WINDOW_DAYS * DAY
    print(f"calibration: {len(mems)} memories born over {BORN_SPAN_DAYS} days, {len(uses)} uses in a "
          f"{WINDOW_DAYS}-day window, bins of 15 days, band ±50% of the appendix-B base")
    print(f"  {'class':<13} {'base':>7} {'λ_true':>8} {'fitted':>8} {'rate':>8} {'status':<8} {'uses':>5} "
          f"{'rel.err':>7}  expected rate")
    for r in calibrate(mems, uses, window_start_ms=start, now_ms=NOW):
        lam = truth[r.decay_class]
        expect = min(max(lam, 0.5 * r.base), 1.5 * r.base)
        err = abs((r.fitted or 0.0) - lam) / lam
        print(f"  {r.decay_class:<13} {r.base:>7.4f} {lam:>8.5f} {r.fitted or 0.0:>8.5f} {r.rate:>8.5f} "
              f"{r.status:<8} {r.samples:>5} {err:>7.1%}  {expect:.5f} ({'ok' if abs(r.rate - expect) / expect < 0.15 else 'OFF'})")
    cls = "user_pref"
    lam = 1.2 * DECAY_RATE_PER_DAY[cls]
    print(f"  error vs uses ({cls}, λ_true = 1.2·base = {lam:.4f}, 300 memories, 40 histories each):")
    for target in (50, 200, 1000, 5000):
        errs, kept, n_uses = [], 0, []
        for _ in range(40):
            m, u = history(rng, cls, lam, 300, uses=target)
            r = next(x for x in calibrate(m, u, window_start_ms=start, now_ms=NOW) if x.decay_class == cls)
            n_uses.append(r.samples)
            kept += r.status == "kept"
            errs.append(abs(r.rate - lam) / lam)
        print(f"    ~{target:>4} uses: median |rate error| {statistics.median(errs):6.1%}, "
              f"90th pct {float(np.percentile(errs, 90)):6.1%}, kept at base {kept}/40 "
              f"(median uses {statistics.median(n_uses):.0f})")
    big_m: list[MemorySample] = []
    big_u: list[Use] = []
    for cls, lam in truth.items():
        m, u = history(rng, cls, lam, 2000, uses=10_000)
        big_m += m
        big_u += u
    secs = _median_seconds(lambda: calibrate(big_m, big_u, window_start_ms=start, now_ms=NOW))
    print(f"  time: {len(big_m)} memories, {len(big_u)} uses: {secs * 1000:.0f} ms (median of 3)")


# ---- patterns -----------------------------------------------------------------------------------

TOPICS = [("docker", "部署"), ("postgres", "数据库"), ("redis", "缓存"), ("kafka", "消息队列"), ("pytest", "测试"),
          ("nginx", "网关"), ("grafana", "监控"), ("terraform", "基础设施")]
CATEGORIES = ("fact", "decision", "preference", "constraint")
NAMESPACES = ("alice-main", "bob-main", "shared")


EN = ("the team uses {en} for the service (ticket {n})", "we keep {en} in production, see ticket {n}",
      "{en} stays the default for new services, ticket {n}")
ZH = ("团队在{zh}环节统一使用{en}（工单{n}）", "{zh}方面继续采用{en}，工单{n}", "新服务的{zh}默认用{en}，见工单{n}")


def _content(rng: np.random.Generator, cid: int, n: int) -> str:
    """A memory text of cluster `cid`: English or Chinese by cluster, on the cluster's topic."""
    en, zh = TOPICS[cid % len(TOPICS)]
    templates = ZH if (cid // 4) % 2 else EN
    return templates[int(rng.integers(len(templates)))].format(en=en, zh=zh, n=n)


def synthetic_clusters(rng: np.random.Generator, n_clusters: int = 200
                       ) -> tuple[list[tuple[int, list[str]]], dict[str, PatternMember], set[tuple[str, ...]]]:
    """(clusters, members, planted member-id tuples). Cluster kinds, in turn: planted (3-8 members
    of one namespace and category, plus decoys of at most 2 per other group and L2 patterns),
    mixed namespaces (2 per namespace), too few (≤2 per group), patterns-only padding (2 L1 + 3 L2)."""
    clusters: list[tuple[int, list[str]]] = []
    members: dict[str, PatternMember] = {}
    planted: set[tuple[str, ...]] = set()

    def add(cid: int, ns: str, cat: str, kind: str = "L1") -> str:
        mid = f"c{cid}-m{len(members)}"
        members[mid] = PatternMember(mid, ns, cat, _content(rng, cid, len(members)), kind)
        return mid

    for cid in range(n_clusters):
        ns, cat = NAMESPACES[cid % 3], CATEGORIES[(cid // 3) % 4]
        others = [(n2, c2) for n2 in NAMESPACES for c2 in CATEGORIES if (n2, c2) != (ns, cat)]
        ids: list[str]
        if cid % 4 == 0:
            ids = [add(cid, ns, cat) for _ in range(int(rng.integers(3, 9)))]
            planted.add(tuple(sorted(ids)))
            for k in rng.choice(len(others), 2, replace=False):
                ids += [add(cid, *others[int(k)]) for _ in range(int(rng.integers(1, 3)))]
            ids += [add(cid, ns, cat, "L2"), add(cid, ns, "pattern", "L2")]
        elif cid % 4 == 1:
            ids = [add(cid, n2, cat) for n2 in NAMESPACES for _ in range(2)]
        elif cid % 4 == 2:
            ids = [add(cid, *others[int(k)]) for k in rng.choice(len(others), 4, replace=False)]
        else:
            ids = [add(cid, ns, cat) for _ in range(2)] + [add(cid, ns, cat, "L2") for _ in range(3)]
        order = rng.permutation(len(ids)) if cid % 4 != 0 else np.arange(len(ids))
        clusters.append((cid, [ids[int(i)] for i in order]))
    return clusters, members, planted


def _score(plans: list[PatternPlan], planted: set[tuple[str, ...]]) -> tuple[float, float]:
    found = {p.member_ids for p in plans}
    hits = len(found & planted)
    return (hits / len(found) if found else 1.0), (hits / len(planted) if planted else 1.0)


def bench_patterns(seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    clusters, members, planted = synthetic_clusters(rng)
    plans = mine_patterns(clusters, members)
    precision, recall = _score(plans, planted)
    print(f"patterns: {len(clusters)} clusters, {len(members)} memories, {len(planted)} planted patterns")
    print(f"  run 1: {len(plans)} plans, precision {precision:.3f}, recall {recall:.3f}")
    again = mine_patterns(clusters, members, existing=[p.member_ids for p in plans])
    print(f"  run 2 (run 1's plans stored): {len(again)} new plans")
    for p in [p for p in plans if "ticket" in p.content][:1] + [p for p in plans if "工单" in p.content][:1]:
        print(f"  e.g. {p.memory_id} [{p.namespace}/{p.category}, {len(p.member_ids)}]: {p.content[:200]}")
    secs = _median_seconds(lambda: mine_patterns(clusters, members))
    print(f"  time: {len(clusters)} clusters: {secs * 1000:.1f} ms (median of 3)")
    clusters, members, planted = synthetic_clusters(np.random.default_rng(seed + 1), 5000)
    secs = _median_seconds(lambda: mine_patterns(clusters, members))
    print(f"  time: {len(clusters)} clusters, {len(members)} memories: {secs * 1000:.0f} ms (median of 3)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    bench_calibration(args.seed)
    print()
    bench_patterns(args.seed)


if __name__ == "__main__":
    main()
