"""Derived memory scores (seed 2.2, 3.2.1, 3.3.1), computed at query time from stored inputs.

Projectors never read the clock, so nothing here is stored: the memories projection keeps the
inputs (timestamps, the stored importance factor, feedback counts, tier, decay class, volatile
flag) and the activity projection the recall counts; callers pass `now_ms` from an injectable
clock.

- importance = factor x recency x (1 + ln(1 + recall_count)), recency = exp(-0.0077 x days since
  the latest version) (half-life 90 days). `factor` is what events set: 0.5 while quality is low
  (< 0.3 with >= 5 votes), 0.1 after the 180-day stale rule. tier=core does not age.
- quality (stored, `projections.memories.fold`) = useful / (useful + not_useful), 0.5 without votes;
  the counts are of agents, each counted once with its latest vote.
- decay (linear, seed 3.3.1) = max(0.1, 1 - idle_days x rate(decay_class)), x2 rate when volatile;
  tier=core is immune (1.0). The rate is appendix B's until deep consolidation calibrates it (seed
  3.3.1: within ±50% of appendix B's, `projections.consolidation`). Idle days count from the later of the latest version and the last
  recall: a memory in use does not decay.
- freshness: `stale` when an event marked it so or when its decay has reached the floor;
  otherwise the stored `verified` / `fresh`.
- rank weight: how much a memory's standing moves its recall score:
  relevance x (1 + weight x (standing - 0.5)), standing = importance/(1 + importance)
  x (0.5 + quality). A fresh, never-recalled memory with neutral quality has standing 0.5 and
  keeps its relevance; a low-quality or old one sinks, a useful and often recalled one rises.
  Decay is not multiplied in again (importance already ages by recency); it decides freshness,
  and through the stale rule the importance factor.
- value (seed 6.3): a memory a rewarded decision trace valued (V in [-1, 1], `commands.learning.values`)
  stands higher or lower: standing x (1 + 0.5 x V), V whole for 90 days after its reward, then halving
  every 30 days (`value_now`). A memory no trace has valued keeps its standing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, Mapping

from events.vocabulary import DECAY_RATE_PER_DAY, source_trust

DAY_MS = 86_400_000
RECENCY_PER_DAY = 0.0077          # exp(-0.0077 x 90) ~ 0.5
DECAY_FLOOR = 0.1
VOLATILE_DECAY_MULTIPLIER = 2.0
DEFAULT_DECAY_RATE = DECAY_RATE_PER_DAY["system_fact"]
NEUTRAL_QUALITY = 0.5             # quality without votes
#: Seed 2.2 / 3.2.1: quality < 0.3 with >= 5 votes is low: the stored importance is halved at once
#: (`projections.memories.fold`), a quality notice goes out, and 7 days later it is deprecated.
QUALITY_DROP_BELOW = 0.3
QUALITY_DROP_MIN_FEEDBACK = 5
QUALITY_DROP_FACTOR = 0.5
NEUTRAL_STANDING = 0.5
#: Default weight of a memory's standing in its recall score (`importance_weight` per request).
#: LoCoMo (tests/bench/locomo.py; no feedback there, every memory fresh, so only recall counts move
#: it): r@5 67.4 vs 67.0 at weight 0 on the tuning conversations, 62.1 vs 62.7 held out.
DEFAULT_RANK_WEIGHT = 0.2
STALE_UNRECALLED_DAYS = 180       # seed 3.3.1 rule 4
STALE_IMPORTANCE_FACTOR = 0.1
QUALITY_DEADLINE_DAYS = 7         # seed 3.2.1: notice, then 7 days to improve


@lru_cache(maxsize=65_536)
def ms_of(iso: str) -> int:
    """Epoch ms of an ISO-8601 timestamp ('' or unparsable -> 0)."""
    if not iso:
        return 0
    try:
        return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0


def days_since(ms: int, now_ms: int) -> float:
    return max(0.0, (now_ms - ms) / DAY_MS) if ms else 0.0


def quality_low(useful: int, not_useful: int, quality: float) -> bool:
    """Low quality (seed 2.2): enough votes (agents, one each) and a quality below the threshold."""
    return useful + not_useful >= QUALITY_DROP_MIN_FEEDBACK and quality < QUALITY_DROP_BELOW


def recency_factor(days_old: float) -> float:
    return math.exp(-RECENCY_PER_DAY * days_old)


def importance(factor: float, days_old: float, recall_count: int, *, core: bool = False) -> float:
    recency = 1.0 if core else recency_factor(days_old)
    return factor * recency * (1.0 + math.log1p(max(0, recall_count)))


def decay(decay_class: str, idle_days: float, *, core: bool = False, volatile: bool = False,
          rates: Mapping[str, float] | None = None) -> float:
    """`rates`: the calibrated rates by decay class (deep consolidation); appendix B's otherwise."""
    if core:
        return 1.0
    rate = (rates or {}).get(decay_class) or DECAY_RATE_PER_DAY.get(decay_class, DEFAULT_DECAY_RATE)
    if volatile:
        rate *= VOLATILE_DECAY_MULTIPLIER
    return max(DECAY_FLOOR, 1.0 - idle_days * rate)


def freshness(stored: str, decay_score: float) -> str:
    if stored == "stale" or decay_score <= DECAY_FLOOR:
        return "stale"
    return stored or "fresh"


def standing(importance_score: float, quality: float) -> float:
    return importance_score / (1.0 + importance_score) * (0.5 + quality)


VALUE_WEIGHT = 0.5
VALUE_STALE_AFTER_DAYS = 90.0
VALUE_HALF_LIFE_DAYS = 30.0


def value_now(v: float, at_ms: int, now_ms: int) -> float:
    """A V-value as of `now_ms`: whole for 90 days after its update, then halving every 30 days."""
    days = (now_ms - at_ms) / DAY_MS
    if days <= VALUE_STALE_AFTER_DAYS:
        return v
    return v * 0.5 ** ((days - VALUE_STALE_AFTER_DAYS) / VALUE_HALF_LIFE_DAYS)


def valued_standing(standing_score: float, value: float) -> float:
    return standing_score * (1.0 + VALUE_WEIGHT * max(-1.0, min(1.0, value)))


def ranked_score(relevance: float, standing_score: float, weight: float) -> float:
    return relevance * (1.0 + weight * (standing_score - NEUTRAL_STANDING))


@dataclass(frozen=True, slots=True)
class Scores:
    importance: float
    decay: float
    freshness: str
    quality: float
    confidence: float
    standing: float
    idle_days: float


def scores_of(row: Mapping[str, Any], now_ms: int, recall_count: int = 0, last_recalled_at: str = "",
              rates: Mapping[str, float] | None = None) -> Scores:
    """Every derived score of one memory row (columns of `projections.memories.schema`) at `now_ms`;
    `rates`: the calibrated decay rates (`projections.consolidation`), appendix B's when absent."""
    core = row.get("tier") == "core"
    updated_ms = ms_of(row.get("updated_at") or row.get("timestamp") or "")
    touched_ms = max(updated_ms, ms_of(last_recalled_at))
    idle = days_since(touched_ms, now_ms)
    imp = importance(float(row.get("importance", 1.0) if row.get("importance") is not None else 1.0),
                     days_since(updated_ms, now_ms), recall_count, core=core)
    dec = decay(row.get("decay_class", ""), idle, core=core, volatile=bool(row.get("volatile_flag")), rates=rates)
    quality = row.get("quality_score")
    quality = NEUTRAL_QUALITY if quality is None else float(quality)
    confidence = row.get("confidence")
    confidence = source_trust(row.get("source", "")) if confidence is None else float(confidence)
    return Scores(importance=imp, decay=dec, freshness=freshness(row.get("freshness", "fresh"), dec),
                  quality=quality, confidence=confidence, standing=standing(imp, quality), idle_days=idle)
