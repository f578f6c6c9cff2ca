"""Decay-rate calibration (seed: consolidation, "对数线性回归拟合实际衰减曲线 → 更新 decay_rate").

Model: a memory of decay class ``c`` is used (recalled, or voted useful) at a rate that falls
with its age like ``r0 · exp(-λ_c · age_days)``. The calibrated rate of the class is the fitted
``λ_c``, kept inside ``[0.5 · base, 1.5 · base]`` of its appendix-B base rate (the seed's safety
rule "新值不得超过旧值 ±50%", anchored to appendix B so repeated runs cannot drift away from it).

Method, per class (exposure-corrected):

1. Ages are cut into bins of ``bin_days``. A memory's *exposure* in a bin is the number of days
   during which it was alive inside the observation window ``[window_start_ms, now_ms]`` while its
   age fell in that bin. Counting exposure matters: a class whose memories are simply young has
   few uses at high ages because few of its memories *reached* those ages, not because old ones
   are used less; dividing by exposure removes that.
2. The use rate of a bin is (uses whose age at use falls in the bin) / (total exposure days). Its
   age is the exposure-weighted mean age of the bin (the bin middle when the bin is fully
   covered; closer to the covered part when it is not, e.g. the oldest bin).
3. ``ln(rate) = a − λ · age`` is fitted by weighted least squares over the bins with at least one
   use, weight = uses in the bin (the inverse variance of a Poisson count's log).

A class needs ``min_samples`` uses and 3 non-empty bins to be fitted; otherwise it keeps its base.
Uses of unknown memories, before the memory's birth or outside the window are ignored. Pure: the
caller reads the recall log and the memory rows, and applies the returned rates.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from events.vocabulary import DECAY_RATE_PER_DAY

__all__ = ["ClassRate", "MemorySample", "Use", "calibrate"]

DAY_MS: Final = 86_400_000
MIN_BINS: Final = 3
BAND: Final = 0.5  # the new rate stays within ±50% of the base


@dataclass(frozen=True, slots=True)
class MemorySample:
    memory_id: str
    decay_class: str
    born_ms: int  # when its current version was written (epoch ms)


@dataclass(frozen=True, slots=True)
class Use:
    memory_id: str
    at_ms: int  # when it was recalled (a recall hit) or voted useful


@dataclass(frozen=True, slots=True)
class ClassRate:
    decay_class: str
    base: float  # appendix B
    rate: float  # the rate to use from now on
    fitted: float | None  # the raw fitted λ (None: not fitted)
    samples: int  # uses of this class inside the window
    status: str  # "fitted" | "clamped" | "kept" (too few samples / too few bins)
    note: str = ""


@dataclass(frozen=True, slots=True)
class _Bin:
    age: float  # exposure-weighted mean age (days)
    rate: float  # uses per exposure day
    uses: int


def _add_exposure(exposure: dict[int, list[float]], a0: float, a1: float, bin_days: float) -> None:
    """Add the age interval [a0, a1] (days) to `exposure`: bin -> [days, ∫ age d(age)]."""
    for k in range(int(a0 // bin_days), int(a1 // bin_days) + 1):
        lo, hi = max(a0, k * bin_days), min(a1, (k + 1) * bin_days)
        if hi > lo:
            cell = exposure.setdefault(k, [0.0, 0.0])
            cell[0] += hi - lo
            cell[1] += (hi * hi - lo * lo) / 2


def _bins(memories: Sequence[MemorySample], uses: Sequence[Use], window_start_ms: int, now_ms: int,
          bin_days: float) -> list[_Bin]:
    """The non-empty age bins of one class (memories and uses already of that class)."""
    exposure: dict[int, list[float]] = {}
    for m in memories:
        start = max(m.born_ms, window_start_ms)
        if now_ms > start:
            _add_exposure(exposure, (start - m.born_ms) / DAY_MS, (now_ms - m.born_ms) / DAY_MS, bin_days)
    born = {m.memory_id: m.born_ms for m in memories}
    counts: dict[int, int] = defaultdict(int)
    for u in uses:
        counts[int(((u.at_ms - born[u.memory_id]) / DAY_MS) // bin_days)] += 1
    out = []
    for k, n in sorted(counts.items()):
        days, moment = exposure.get(k, (0.0, 0.0))
        if days > 0:  # a use exactly at an exposure edge can land in an unexposed bin
            out.append(_Bin(age=moment / days, rate=n / days, uses=n))
    return out


def _fit(bins: list[_Bin]) -> float:
    """λ of the weighted least-squares line ln(rate) = a − λ·age."""
    w = sum(b.uses for b in bins)
    x_bar = sum(b.uses * b.age for b in bins) / w
    y_bar = sum(b.uses * math.log(b.rate) for b in bins) / w
    sxy = sum(b.uses * (b.age - x_bar) * (math.log(b.rate) - y_bar) for b in bins)
    sxx = sum(b.uses * (b.age - x_bar) ** 2 for b in bins)
    return -sxy / sxx


def _decide(decay_class: str, base: float, bins: list[_Bin], samples: int, min_samples: int) -> ClassRate:
    if samples < min_samples:
        return ClassRate(decay_class, base, base, None, samples, "kept", f"{samples} uses < {min_samples}")
    if len(bins) < MIN_BINS:
        return ClassRate(decay_class, base, base, None, samples, "kept",
                         f"{len(bins)} non-empty age bins < {MIN_BINS}")
    fitted = _fit(bins)
    low, high = (1 - BAND) * base, (1 + BAND) * base
    if fitted < low:
        return ClassRate(decay_class, base, low, fitted, samples, "clamped", f"fitted {fitted:.5f} below -50%")
    if fitted > high:
        return ClassRate(decay_class, base, high, fitted, samples, "clamped", f"fitted {fitted:.5f} above +50%")
    return ClassRate(decay_class, base, fitted, fitted, samples, "fitted")


def calibrate(memories: list[MemorySample], uses: list[Use], *, window_start_ms: int, now_ms: int,
              bases: Mapping[str, float] = DECAY_RATE_PER_DAY, min_samples: int = 20,
              bin_days: float = 15.0) -> list[ClassRate]:
    """One :class:`ClassRate` per class of `bases`, sorted by class name (see the module doc).

    `memories`: the memories alive now, with their class and birth; `uses`: their recall hits
    and useful votes (any period: those outside ``[window_start_ms, now_ms]`` are ignored).
    """
    if bin_days <= 0:
        raise ValueError("bin_days must be positive")
    by_id = {m.memory_id: m for m in memories if m.decay_class in bases}
    mems: dict[str, list[MemorySample]] = defaultdict(list)
    for m in by_id.values():
        mems[m.decay_class].append(m)
    used: dict[str, list[Use]] = defaultdict(list)
    for u in uses:
        owner = by_id.get(u.memory_id)
        if owner is not None and window_start_ms <= u.at_ms <= now_ms and u.at_ms >= owner.born_ms:
            used[owner.decay_class].append(u)
    out = []
    for c in sorted(bases):
        bins = _bins(mems[c], used[c], window_start_ms, now_ms, bin_days)
        out.append(_decide(c, float(bases[c]), bins, len(used[c]), min_samples))
    return out
