"""Recall fusion: absolute scores (calibration, monotonicity, determinism) and the baselines."""

from __future__ import annotations

import itertools

import pytest

from projections.queries.recall.fusion import (
    DEFAULT,
    E5,
    EPS,
    MIN_SCORE_DEFAULTS,
    FusionParams,
    absolute_score,
    fuse,
    fuse_minmax,
    fuse_weighted,
    minmax,
    rrf,
)

DENSE = [("a", 0.62), ("b", 0.60), ("c", 0.31)]
LEX = [("c", 12.0), ("d", 6.0), ("a", 5.0)]
USE_FLOOR = MIN_SCORE_DEFAULTS["use-multilingual-v3"]


def test_absolute_score_formula() -> None:
    p = FusionParams(dense_weight=0.25, cos_floor=0.2, cos_ceiling=0.6, bm25_half=4.0)
    d = EPS + (1 - EPS) * 0.5          # cos 0.4 is half way from 0.2 to 0.6
    lex = EPS + (1 - EPS) * 4 / 8      # bm25 == half -> 0.5
    assert absolute_score(0.4, 4.0, p) == pytest.approx(d**0.25 * lex**0.75)
    assert absolute_score(0.6, None, p) == 1.0 and absolute_score(0.1, None, p) == 0.0
    assert absolute_score(None, 4.0, p) == pytest.approx(0.5)
    assert absolute_score(None, None, p) == 0.0


def test_single_weak_candidate_scores_low_and_strong_one_high() -> None:
    # Min-max gave any lone candidate 1.0; the absolute score does not.
    weak = fuse([("x", 0.15)], [("x", 1.2)])
    strong = fuse([("y", 0.72)], [("y", 25.0)])
    assert weak[0][0] == "x" and weak[0][1] < 0.3 < USE_FLOOR
    assert strong[0][0] == "y" and strong[0][1] > 0.8
    assert fuse_minmax([("x", 0.15)], [("x", 1.2)])[0][1] == 1.0


def test_scores_are_comparable_across_queries() -> None:
    # The same (cosine, bm25) scores the same whatever else the query's pools hold.
    alone = dict(fuse([("m", 0.5)], [("m", 8.0)]))["m"]
    crowded = dict(fuse([("m", 0.5), ("n", 0.7), ("o", 0.2)], [("m", 8.0), ("n", 30.0)]))["m"]
    assert alone == pytest.approx(crowded)


def test_score_is_monotone_in_each_signal_and_bounded() -> None:
    cosines = [-0.2, 0.0, 0.1, 0.3, 0.5, 0.8, 0.95]
    bm25s = [0.0, 0.5, 3.0, 6.0, 12.0, 40.0]
    for params in (DEFAULT, E5):
        grid = {(c, b): absolute_score(c, b, params) for c, b in itertools.product(cosines, bm25s)}
        assert all(0.0 <= s <= 1.0 for s in grid.values())
        for c1, c2 in itertools.pairwise(cosines):
            assert all(grid[(c1, b)] <= grid[(c2, b)] for b in bm25s)
        for b1, b2 in itertools.pairwise(bm25s):
            assert all(grid[(c, b1)] < grid[(c, b2)] for c in cosines)


def test_both_signals_are_needed_for_a_high_score() -> None:
    lexical_only = absolute_score(0.0, 40.0)
    dense_only = absolute_score(0.8, 0.0)
    both = absolute_score(0.8, 40.0)
    assert both > 0.85 and lexical_only < both and dense_only < 0.1


def test_missing_from_a_full_pool_gets_the_pool_minimum() -> None:
    p = FusionParams(pool=3)
    dense = [("a", 0.7), ("b", 0.6), ("c", 0.5)]      # full: c's 0.5 bounds the others
    lexical = [("z", 10.0), ("a", 2.0)]               # short: absent means no match
    out = dict(fuse(dense, lexical, params=p))
    assert out["z"] == pytest.approx(absolute_score(0.5, 10.0, p))
    assert out["b"] == pytest.approx(absolute_score(0.6, 0.0, p))
    full_lex = [("z", 10.0), ("a", 2.0), ("y", 1.5)]
    assert dict(fuse(dense, full_lex, params=p))["b"] == pytest.approx(absolute_score(0.6, 1.5, p))


def test_an_empty_list_drops_out() -> None:
    only_dense = fuse(DENSE, [])
    assert [i for i, _ in only_dense] == ["a", "b", "c"]
    assert only_dense[0][1] == pytest.approx(0.62 / 0.8)
    assert [i for i, _ in fuse([], LEX)] == ["c", "d", "a"]
    assert dict(fuse([], LEX))["d"] == pytest.approx(0.5)
    assert fuse([], []) == []


def test_fuse_orders_best_first_with_lexical_weight_dominant() -> None:
    out = fuse(DENSE, LEX)
    scores = [s for _, s in out]
    assert scores == sorted(scores, reverse=True)
    assert {i for i, _ in out} == {"a", "b", "c", "d"}
    assert out[0][0] == "c"  # the strong lexical hit
    dense_heavy = fuse(DENSE, LEX, params=FusionParams(dense_weight=0.9))
    assert dense_heavy[0][0] == "a"


def test_ties_break_by_id_for_determinism() -> None:
    dense = [("z", 0.5), ("m", 0.5), ("a", 0.5)]
    assert [i for i, _ in fuse(dense, [])] == ["a", "m", "z"]
    assert fuse(DENSE, LEX) == fuse(list(reversed(DENSE)), list(reversed(LEX)))


def test_min_score_defaults_split_weak_from_strong() -> None:
    assert set(MIN_SCORE_DEFAULTS) == {"use-multilingual-v3", "multilingual-e5-small"}
    assert absolute_score(0.55, 10.0, DEFAULT) > USE_FLOOR > absolute_score(0.2, 2.0, DEFAULT)
    e5_floor = MIN_SCORE_DEFAULTS["multilingual-e5-small"]
    assert absolute_score(0.87, 10.0, E5) > e5_floor > absolute_score(0.80, 2.0, E5)


def test_minmax_baseline() -> None:
    assert minmax([("x", 3.0), ("y", 2.0), ("z", 1.0)]) == {"x": 1.0, "y": 0.5, "z": 0.0}
    assert minmax([("x", 0.4)]) == {"x": 1.0}
    assert minmax([]) == {}
    out = dict(fuse_minmax(DENSE, LEX, params=FusionParams(dense_weight=0.3)))
    assert out["a"] == pytest.approx(0.3) and out["c"] == pytest.approx(0.7)
    three = dict(fuse_weighted([(DENSE, 0.2), ([("a", 1.0)], 0.2), (LEX, 0.6)]))
    assert three["a"] == pytest.approx(0.4)


def test_rrf_baseline() -> None:
    out = dict(rrf(DENSE, LEX))
    assert out["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert out["d"] == pytest.approx(1 / 62)
    assert [i for i, _ in rrf(DENSE, LEX)][:2] == ["a", "c"]  # tie broken by id
    assert rrf(DENSE, LEX, k=10, weights=[1.0, 3.0])[0][0] == "c"
    with pytest.raises(ValueError):
        rrf(DENSE, LEX, weights=[1.0])


def test_params_are_frozen_and_validated() -> None:
    assert DEFAULT.dense_weight == 0.1 and E5.dense_weight == 0.25 and DEFAULT.pool == 50
    with pytest.raises(AttributeError):
        DEFAULT.dense_weight = 0.5  # type: ignore[misc]
    for bad in ({"dense_weight": 1.5}, {"cos_floor": 0.9, "cos_ceiling": 0.8}, {"bm25_half": 0.0}, {"pool": 0}):
        with pytest.raises(ValueError):
            FusionParams(**bad)
