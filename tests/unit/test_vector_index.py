"""The serving index's dense search: exact top-k, and IVF recall against it."""

from __future__ import annotations

import numpy as np

from projections.vector_index import IvfParams, exact_top, train_ivf


def _unit(m: np.ndarray) -> np.ndarray:
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def _clustered(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(60, dim))
    return _unit(centres[rng.integers(0, 60, n)] + 0.6 * rng.normal(size=(n, dim)))


def test_exact_top_ranks_live_rows_only() -> None:
    v = _unit(np.eye(4, dtype=np.float32) + 0.01)
    live = np.array([True, False, True, True])
    hits = exact_top(v, v[1], 4, live)
    assert 1 not in [s for s, _ in hits] and len(hits) == 3
    assert [h[1] for h in hits] == sorted((h[1] for h in hits), reverse=True)
    assert exact_top(v, v[2], 1, np.ones(4, dtype=bool))[0][0] == 2


def test_ivf_recall_at_10_against_exact_and_tail_rows() -> None:
    dim, n = 64, 12_000
    vectors = _clustered(n + 500, dim, 1)
    live = np.ones(n + 500, dtype=bool)
    live[::97] = False
    params = IvfParams()
    ivf = train_ivf(vectors[:n], live[:n], params)
    assert ivf.covered == n and len(ivf.order) == int(live[:n].sum())
    again = train_ivf(vectors[:n], live[:n], params)
    assert np.array_equal(ivf.order, again.order)  # deterministic
    queries = _clustered(200, dim, 2)
    found = 0
    for q in queries:
        want = {s for s, _ in exact_top(vectors, q, 10, live)}
        got = ivf.search(vectors, n + 500, q, 10, live, params)  # 500 rows added after training
        assert all(live[s] for s, _ in got)
        found += len(want & {s for s, _ in got})
    assert found / (10 * len(queries)) >= 0.95
    tail_hit = ivf.search(vectors, n + 500, vectors[n + 10], 1, live, params)
    assert tail_hit[0][0] == n + 10  # rows added after the partitioning are searched exactly
    assert not ivf.stale(n + 500, params) and ivf.stale(n + 2000, params)


def test_top_hits_matches_a_full_sort_with_ties() -> None:
    from projections.topk import top_hits

    rng = np.random.default_rng(3)
    for n in (10, 5000, 60_000):
        scores = np.round(rng.random(n), 3).astype(np.float32)  # many ties
        cand = np.arange(n) * 2
        want = sorted(((int(c), float(s)) for c, s in zip(cand, scores)), key=lambda h: (-h[1], h[0]))[:50]
        got = top_hits(cand, scores, 50)
        assert [s for _, s in got] == [s for _, s in want]
        assert len(got) == min(n, 50)


def test_top_hits_over_a_whole_score_array_keeps_positive_scores_only() -> None:
    from projections.topk import top_hits

    rng = np.random.default_rng(5)
    for n, density in ((100, 0.5), (60_000, 0.3), (60_000, 0.0005)):
        scores = np.where(rng.random(n) < density, np.round(rng.random(n), 2) + 0.01, 0.0).astype(np.float32)
        want = sorted(((i, float(s)) for i, s in enumerate(scores) if s > 0), key=lambda h: (-h[1], h[0]))[:50]
        got = top_hits(None, scores, 50)
        assert [s for _, s in got] == [s for _, s in want] and all(scores[i] == s for i, s in got)
