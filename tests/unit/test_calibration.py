"""Unit tests for commands.consolidation.calibration: decay rates fitted on synthetic histories
whose true rate is known (uses drawn as a Poisson process with intensity r0·exp(-λ·age))."""

from __future__ import annotations

import numpy as np
import pytest

from commands.consolidation.calibration import ClassRate, MemorySample, Use, calibrate
from events.vocabulary import DECAY_RATE_PER_DAY

DAY = 86_400_000
NOW = 1_750_000_000_000
WINDOW_DAYS = 180
START = NOW - WINDOW_DAYS * DAY


def history(rng: np.random.Generator, cls: str, lam: float, *, n: int = 300, r0: float = 0.2,
            born_span: float = 360.0) -> tuple[list[MemorySample], list[Use]]:
    """`n` memories of class `cls` born uniformly over the last `born_span` days, and their uses
    inside the window: a Poisson process of intensity r0·exp(-lam·age) per day."""
    mems: list[MemorySample] = []
    uses: list[Use] = []
    for i, born_ago in enumerate(rng.uniform(0.0, born_span, n)):
        mid, born = f"{cls}-{i}", NOW - int(born_ago * DAY)
        a0, a1 = max(0.0, born_ago - WINDOW_DAYS), born_ago  # ages seen inside the window
        e0, e1 = np.exp(-lam * a0), np.exp(-lam * a1)
        expected = r0 * ((e0 - e1) / lam if lam > 0 else a1 - a0)
        u = rng.uniform(0.0, 1.0, rng.poisson(expected))
        ages = -np.log(e0 - u * (e0 - e1)) / lam if lam > 0 else a0 + u * (a1 - a0)
        mems.append(MemorySample(mid, cls, born))
        uses.extend(Use(mid, min(NOW, born + int(a * DAY))) for a in ages)
    return mems, uses


def by_class(rates: list[ClassRate]) -> dict[str, ClassRate]:
    return {r.decay_class: r for r in rates}


def mixed(seed: int) -> dict[str, ClassRate]:
    rng = np.random.default_rng(seed)
    true = {"user_pref": 1.2, "proj_context": 0.7, "tool_usage": 3.0, "code_snippet": 0.2}
    mems: list[MemorySample] = []
    uses: list[Use] = []
    for cls, factor in true.items():
        m, u = history(rng, cls, factor * DECAY_RATE_PER_DAY[cls])
        mems += m
        uses += u
    m, u = history(rng, "system_fact", DECAY_RATE_PER_DAY["system_fact"], n=300)
    mems += m
    uses += u[:5]
    return by_class(calibrate(mems, uses, window_start_ms=START, now_ms=NOW))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fitted_rate_inside_band_is_close_to_truth(seed: int) -> None:
    rates = mixed(seed)
    for cls, factor in (("user_pref", 1.2), ("proj_context", 0.7)):
        r, truth = rates[cls], factor * DECAY_RATE_PER_DAY[cls]
        assert r.status == "fitted", r
        assert r.fitted is not None and r.rate == r.fitted
        assert abs(r.fitted - truth) / truth < 0.15, (cls, r.fitted, truth)
        assert r.samples > 1000


def test_rates_outside_band_are_clamped_to_base_band() -> None:
    rates = mixed(0)
    high, low = rates["tool_usage"], rates["code_snippet"]
    assert high.status == "clamped" and high.fitted is not None and high.fitted > 2 * DECAY_RATE_PER_DAY["tool_usage"]
    assert high.rate == pytest.approx(1.5 * DECAY_RATE_PER_DAY["tool_usage"])
    assert low.status == "clamped" and low.fitted is not None and low.fitted < 0.4 * DECAY_RATE_PER_DAY["code_snippet"]
    assert low.rate == pytest.approx(0.5 * DECAY_RATE_PER_DAY["code_snippet"])


def test_few_samples_keep_base_and_every_class_is_reported_sorted() -> None:
    rates = mixed(0)
    kept = rates["system_fact"]
    assert (kept.status, kept.rate, kept.fitted, kept.samples) == ("kept", DECAY_RATE_PER_DAY["system_fact"], None, 5)
    out = calibrate([], [], window_start_ms=START, now_ms=NOW)
    assert [r.decay_class for r in out] == sorted(DECAY_RATE_PER_DAY)
    assert all(r.status == "kept" and r.rate == r.base and r.samples == 0 for r in out)


def test_too_few_bins_keep_base() -> None:
    rng = np.random.default_rng(3)
    mems, uses = history(rng, "user_pref", 0.005, r0=1.0, born_span=25.0)  # ages < 30 days: 2 bins
    r = by_class(calibrate(mems, uses, window_start_ms=START, now_ms=NOW))["user_pref"]
    assert r.samples > 1000 and r.status == "kept" and r.rate == 0.005 and "bins" in r.note


def test_exposure_correction_young_memories_with_flat_use_are_not_fast_decay() -> None:
    rng = np.random.default_rng(4)
    mems, uses = history(rng, "code_snippet", 0.0, r0=0.3, born_span=90.0)
    base = DECAY_RATE_PER_DAY["code_snippet"]
    r = by_class(calibrate(mems, uses, window_start_ms=START, now_ms=NOW))["code_snippet"]
    assert r.fitted is not None and abs(r.fitted) < 0.3 * base, r
    assert r.status == "clamped" and r.rate == pytest.approx(0.5 * base)
    # without the exposure correction the same uses look like decay far above the band
    born = {m.memory_id: m.born_ms for m in mems}
    ages = np.array([(u.at_ms - born[u.memory_id]) / DAY for u in uses])
    counts = np.bincount((ages // 15).astype(int))
    k = np.nonzero(counts)[0]
    naive = -np.polyfit(k * 15 + 7.5, np.log(counts[k]), 1, w=np.sqrt(counts[k]))[0]
    assert naive > 1.5 * base


def test_ignored_uses_and_custom_bases() -> None:
    mems = [MemorySample("a", "x", NOW - 100 * DAY), MemorySample("b", "unknown-class", NOW - 100 * DAY)]
    uses = [Use("a", NOW - 10 * DAY), Use("a", NOW - 101 * DAY),  # before birth
            Use("a", START - DAY), Use("a", NOW + DAY),  # outside the window
            Use("ghost", NOW - DAY), Use("b", NOW - DAY)]  # unknown memory / class not in bases
    (r,) = calibrate(mems, uses, window_start_ms=START, now_ms=NOW, bases={"x": 0.02})
    assert (r.decay_class, r.base, r.rate, r.samples, r.status) == ("x", 0.02, 0.02, 1, "kept")


def test_band_is_anchored_to_given_base_and_pure() -> None:
    rng = np.random.default_rng(5)
    mems, uses = history(rng, "x", 0.05, r0=0.2)
    first = calibrate(mems, uses, window_start_ms=START, now_ms=NOW, bases={"x": 0.01}, min_samples=20)
    assert first == calibrate(mems, uses, window_start_ms=START, now_ms=NOW, bases={"x": 0.01})
    assert first[0].status == "clamped" and first[0].rate == pytest.approx(0.015)
    wide = calibrate(mems, uses, window_start_ms=START, now_ms=NOW, bases={"x": 0.04})[0]
    assert wide.status == "fitted" and wide.fitted is not None and abs(wide.fitted - 0.05) < 0.0075
