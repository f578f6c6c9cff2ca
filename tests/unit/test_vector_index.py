"""The serving index's dense search: exact top-k, and IVF recall against it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from projections.serving.dense import IvfParams, exact_top, train_ivf


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
    from projections.serving.topk import top_hits

    rng = np.random.default_rng(3)
    for n in (10, 5000, 60_000):
        scores = np.round(rng.random(n), 3).astype(np.float32)  # many ties
        cand = np.arange(n) * 2
        want = sorted(((int(c), float(s)) for c, s in zip(cand, scores)), key=lambda h: (-h[1], h[0]))[:50]
        got = top_hits(cand, scores, 50)
        assert [s for _, s in got] == [s for _, s in want]
        assert len(got) == min(n, 50)


def test_top_hits_over_a_whole_score_array_keeps_positive_scores_only() -> None:
    from projections.serving.topk import top_hits

    rng = np.random.default_rng(5)
    for n, density in ((100, 0.5), (60_000, 0.3), (60_000, 0.0005)):
        scores = np.where(rng.random(n) < density, np.round(rng.random(n), 2) + 0.01, 0.0).astype(np.float32)
        want = sorted(((i, float(s)) for i, s in enumerate(scores) if s > 0), key=lambda h: (-h[1], h[0]))[:50]
        got = top_hits(None, scores, 50)
        assert [s for _, s in got] == [s for _, s in want] and all(scores[i] == s for i, s in got)


def _low_rank(n: int, dim: int, rank: int, seed: int) -> np.ndarray:
    """Unit vectors near a `rank`-dimensional subspace, in clusters: like sentence embeddings,
    whose variance sits in a fraction of their dimensions."""
    rng = np.random.default_rng(seed)
    axes = np.linalg.qr(np.random.default_rng(99).normal(size=(dim, rank)))[0].T     # shared by every call
    centres = rng.normal(size=(80, rank))
    inner = centres[rng.integers(0, 80, n)] + 0.25 * rng.normal(size=(n, rank))
    return _unit(inner @ axes + 0.05 * rng.normal(size=(n, dim)))


def test_reduced_scan_keeps_recall_and_finds_tail_rows() -> None:
    dim, n = 512, 12_000
    vectors = _low_rank(n + 800, dim, 48, 1)
    live = np.ones(n + 800, dtype=bool)
    live[::89] = False
    params = IvfParams()
    ivf = train_ivf(vectors[:n], live[:n], params)
    assert ivf.basis is not None and ivf.basis.shape == (dim, 64) and ivf.reduced.shape == (len(ivf.order), 64)
    full = train_ivf(vectors[:n], live[:n], IvfParams(reduce_variance=0))
    assert full.basis is None and np.array_equal(full.order, ivf.order)   # the same lists either way
    queries = _low_rank(200, dim, 48, 2)
    found = {"reduced": 0, "full": 0}
    for size in (n + 300, n + 800):       # the tail's reduced rows grow with the partition
        for q in queries:
            want = {s for s, _ in exact_top(vectors[:size], q, 10, live[:size])}
            got = ivf.search(vectors, size, q, 10, live, params)
            assert all(live[s] and s < size for s, _ in got)
            assert [c for _, c in got] == sorted((c for _, c in got), reverse=True)
            assert all(abs(c - float(vectors[s] @ q)) < 1e-5 for s, c in got)   # exact cosines
            found["reduced"] += len(want & {s for s, _ in got})
            found["full"] += len(want & {s for s, _ in full.search(vectors, size, q, 10, live, params)})
        assert ivf.tail_rows == size - n
    assert found["reduced"] >= 0.99 * found["full"]     # the reduction loses (next to) nothing ...
    assert found["reduced"] / (2 * 10 * len(queries)) >= 0.9   # ... of what the lists probed hold
    tail_hit = ivf.search(vectors, n + 800, vectors[n + 10], 1, live, params)
    assert tail_hit[0][0] == n + 10


def test_reduced_scan_reranking_every_candidate_equals_the_full_scan() -> None:
    dim, n = 512, 11_000
    vectors = _low_rank(n + 100, dim, 48, 3)
    live = np.ones(n + 100, dtype=bool)
    live[5::31] = False
    everything = IvfParams(rerank=10 ** 9)
    ivf = train_ivf(vectors[:n], live[:n], everything)
    full = train_ivf(vectors[:n], live[:n], IvfParams(reduce_variance=0))
    for q in _low_rank(30, dim, 48, 4):
        got = ivf.search(vectors, n + 100, q, 20, live, everything)
        want = full.search(vectors, n + 100, q, 20, live, everything)
        assert [s for s, _ in got] == [s for s, _ in want]
        assert np.allclose([c for _, c in got], [c for _, c in want], atol=1e-6)


def test_data_without_dominant_directions_keeps_the_full_scan() -> None:
    rng = np.random.default_rng(7)
    noise = _unit(rng.normal(size=(11_000, 512)))      # isotropic: no few axes hold 85% of it
    assert train_ivf(noise, np.ones(len(noise), dtype=bool), IvfParams()).basis is None
    assert train_ivf(_clustered(11_000, 64, 1), np.ones(11_000, dtype=bool), IvfParams()).basis is None  # 64 dims


def test_a_namespace_below_min_rows_scans_one_flat_list_in_the_reduced_space() -> None:
    """From `flat_min_rows`: one list of every row, scanned in the principal axes and re-scored
    with the int8 rows the partition holds; recall@10 against an exact float32 scan stays >= 0.99.
    At `min_rows` it is partitioned into lists like any big namespace."""
    from projections.serving.bm25 import BM25Params
    from projections.serving.partition import Partition

    dim, n = 512, 3_000
    vectors = _low_rank(n + 2_000, dim, 48, 5).astype(np.float32)
    params = IvfParams(min_rows=4_000)
    part = Partition("ns", dim, BM25Params())
    for i in range(n):
        part.add({"id": f"m{i}", "content": f"m{i}"}, vectors[i], [f"t{i}"])
    part.remove(17)
    assert part.wants_ivf(params)
    part.ivf = part.train(params)
    assert len(part.ivf.centroids) == 1 and part.ivf.basis is not None and not part.wants_ivf(params)
    live = part.live[:n]
    found = 0
    queries = _low_rank(100, dim, 48, 6).astype(np.float32)
    for q in queries:
        want = {s for s, _ in exact_top(vectors[:n], q, 10, live)}
        got = part.dense(q, 10, params)
        assert 17 not in {s for s, _ in got}
        found += len(want & {s for s, _ in got})
    assert found / (10 * len(queries)) >= 0.99
    for i in range(n, n + 1_200):           # past min_rows: partitioned into lists
        part.add({"id": f"m{i}", "content": f"m{i}"}, vectors[i], [f"t{i}"])
    assert part.wants_ivf(params)
    part.ivf = part.train(params)
    assert len(part.ivf.centroids) > 1


def test_a_flat_partitioning_without_principal_axes_scans_exactly() -> None:
    from projections.serving.bm25 import BM25Params
    from projections.serving.partition import Partition

    rng = np.random.default_rng(8)
    noise = _unit(rng.normal(size=(2_000, 512))).astype(np.float32)
    part = Partition("ns", 512, BM25Params())
    for i, v in enumerate(noise):
        part.add({"id": f"m{i}", "content": ""}, v, [])
    part.ivf = part.train(IvfParams())
    assert part.ivf.basis is None and not part.wants_ivf(IvfParams())   # tried: not again before it grows
    assert [s for s, _ in part.dense(noise[5], 3, IvfParams())][0] == 5
    assert [s for s, _ in part.dense(noise[5], 10, IvfParams())] == \
        [s for s, _ in exact_top(part.vectors, noise[5], 10, part.live, size=part.size)]


async def test_several_namespaces_rescore_the_best_of_their_pooled_candidates() -> None:
    """A recall over several namespaces re-scores the best candidates of all their reduced scans
    (as many as one namespace does), not that many of each: the same hits as searching each
    namespace on its own, nearly always, with exact cosines."""
    from projections.serving.bm25 import BM25Params
    from projections.serving.index import ServingIndex, _State
    from projections.serving.partition import Partition

    dim, per = 512, 3_000
    params = IvfParams(min_rows=4_000)
    index = ServingIndex(Path("unused"), ivf=params)
    index._state = _State()
    for k in range(5):                      # each namespace its own topics, as agents' memories
        vectors = _low_rank(per, dim, 48, 20 + k).astype(np.float32)
        part = Partition(f"ns{k}", dim, BM25Params())
        for i in range(per):
            part.add({"id": f"n{k}-{i}", "content": "x"}, vectors[i], ["x"])
        part.remove(3)
        part.ivf = part.train(params)
        assert part.ivf.basis is not None
        index._state.parts[part.namespace] = part
    namespaces = list(index._state.parts)
    same_top, found = 0, 0
    queries = _low_rank(60, dim, 48, 20).astype(np.float32)
    for q in queries:
        got = await index.adense(q, namespaces, 50)
        alone = []
        for ns in namespaces:
            alone += await index.adense(q, [ns], 50)    # one namespace: its own re-scoring
        alone.sort(key=lambda h: (-h[1], h[0]))
        assert [c for _, c in got] == sorted((c for _, c in got), reverse=True)
        assert "n0-3" not in {i for i, _ in got}
        for mid, cos in got[:10]:
            ns, slot = mid.split("-")
            part = index._state.parts[ns.replace("n", "ns")]
            assert abs(cos - float(part.vectors.row(int(slot)) @ q)) < 1e-5
        found += len({i for i, _ in alone[:10]} & {i for i, _ in got[:10]})
        same_top += got[0][0] == alone[0][0]
    assert found / (10 * len(queries)) >= 0.99 and same_top / len(queries) >= 0.99
