"""Unit tests for projections.queries.recall.mmr (seed 2.6 step 4)."""

from __future__ import annotations

import numpy as np
import pytest

from projections.queries.recall.mmr import mmr


def unit_rows(rows: list[list[float]]) -> np.ndarray:
    a = np.asarray(rows, dtype=np.float32)
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def random_case(n: int, d: int = 8, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random(n), unit_rows(rng.normal(size=(n, d)).tolist())


def test_diversity_zero_keeps_relevance_order() -> None:
    rel, vecs = random_case(20)
    assert mmr(rel, vecs, k=20, diversity=0.0) == [int(i) for i in np.argsort(-rel, kind="stable")]


def test_diversity_zero_ties_keep_input_order() -> None:
    rel = np.array([0.5, 0.9, 0.5, 0.9])
    vecs = unit_rows([[1, 0], [1, 0], [1, 0], [1, 0]])
    assert mmr(rel, vecs, k=4, diversity=0.0) == [1, 3, 0, 2]


def test_near_duplicate_is_demoted_at_high_diversity() -> None:
    # 0 and 1 are near-duplicates; 2 is a little less relevant but says something else.
    rel = np.array([0.95, 0.93, 0.80, 0.10])
    vecs = unit_rows([[1.0, 0.0, 0.0], [0.99, 0.01, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert mmr(rel, vecs, k=3, diversity=0.0) == [0, 1, 2]
    # 1 - max_sim is ~0 for the duplicate, so even the unrelated item 3 outranks it.
    assert mmr(rel, vecs, k=3, diversity=0.5) == [0, 2, 3]
    assert mmr(rel, vecs, k=4, diversity=0.5) == [0, 2, 3, 1]
    # A little diversity only promotes the different item above the duplicate.
    assert mmr(rel, vecs, k=3, diversity=0.2) == [0, 2, 1]


def test_first_pick_is_most_relevant_even_at_full_diversity() -> None:
    rel, vecs = random_case(10, seed=3)
    order = mmr(rel, vecs, k=10, diversity=1.0)
    assert order[0] == int(np.argmax(rel))
    assert sorted(order) == list(range(10))


def test_k_larger_than_n_and_zero() -> None:
    rel, vecs = random_case(5)
    order = mmr(rel, vecs, k=50, diversity=0.5)
    assert sorted(order) == [0, 1, 2, 3, 4]
    assert mmr(rel, vecs, k=0) == []
    assert mmr(np.zeros(0), np.zeros((0, 8)), k=10) == []


def test_deterministic() -> None:
    rel, vecs = random_case(40, seed=7)
    first = mmr(rel, vecs, k=10, diversity=0.5)
    assert all(mmr(rel.copy(), vecs.copy(), k=10, diversity=0.5) == first for _ in range(5))
    assert len(first) == len(set(first)) == 10


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), float("inf")])
def test_invalid_diversity(bad: float) -> None:
    rel, vecs = random_case(3)
    with pytest.raises(ValueError, match="diversity"):
        mmr(rel, vecs, k=2, diversity=bad)


def test_invalid_shapes_and_values() -> None:
    rel, vecs = random_case(3)
    with pytest.raises(ValueError, match="vectors"):
        mmr(rel, vecs[:2], k=2)
    with pytest.raises(ValueError, match="k must"):
        mmr(rel, vecs, k=-1)
    with pytest.raises(ValueError, match="non-finite"):
        mmr(np.array([0.1, np.nan, 0.3]), vecs, k=2)


def test_only_near_duplicates_count_as_redundant() -> None:
    # a, a restatement of it (cosine 0.96), b on a's topic (0.6) and an unrelated, weaker c (0):
    # topic overlap is not redundancy, so only the restatement is pushed down, even at diversity 1.
    a = [1.0, 0.0, 0.0, 0.0]
    dup = [0.96, 0.0, 0.0, 0.28]
    b = [0.6, 0.8, 0.0, 0.0]
    c = [0.0, 0.0, 1.0, 0.0]
    vecs = unit_rows([a, dup, b, c])
    rel = np.array([1.0, 0.95, 0.9, 0.5])
    for diversity in (0.5, 1.0):
        assert mmr(rel, vecs, k=4, diversity=diversity) == [0, 2, 3, 1]
    # textbook MMR (floor 0) trades b's topic overlap for c's novelty
    assert mmr(rel, vecs, k=4, diversity=0.5, redundancy_floor=0.0)[:2] == [0, 3]
    assert mmr(rel, vecs, k=4, diversity=0.0) == [0, 1, 2, 3]


@pytest.mark.parametrize("floor", [-0.1, 1.0, 1.5])
def test_redundancy_floor_is_validated(floor: float) -> None:
    rel, vecs = random_case(4)
    with pytest.raises(ValueError, match="redundancy_floor"):
        mmr(rel, vecs, k=2, redundancy_floor=floor)
