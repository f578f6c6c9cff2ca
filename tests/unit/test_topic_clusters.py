"""Topic clustering (commands.consolidation.clusters) on synthetic blobs with known membership."""

from __future__ import annotations

import hdbscan
import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from commands.consolidation.clusters import Clustering, agreement, topic_clusters


def _unit(rows: np.ndarray) -> np.ndarray:
    return np.asarray(rows / np.linalg.norm(rows, axis=1, keepdims=True), dtype=np.float32)


def blobs(sizes: list[int], *, dim: int = 512, outliers: int = 0, seed: int = 7,
          latent: int = 16, spread: float = 0.05) -> tuple[np.ndarray, list[int]]:
    """Gaussian blobs (topics) on the unit sphere, then `outliers` stray points; returns
    (vectors, true label per row: blob index, -1 for an outlier).

    Like real embeddings the points live near a low-dimensional subspace (`latent` dims, plus a
    little noise in all `dim`), and the topics sit together on one side of the sphere: each
    centre is a shared direction plus its own orthogonal offset. The outliers are scattered over
    the opposite side, farther from every topic than the topics are from each other."""
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.normal(size=(dim, latent)))
    frame, _ = np.linalg.qr(rng.normal(size=(latent, len(sizes) + 1)))
    shared, offsets = frame[:, 0], frame[:, 1:].T
    centres = _unit(shared + 0.9 * offsets)
    rows, truth = [], []
    for label, (centre, size) in enumerate(zip(centres, sizes)):
        rows.append(centre + rng.normal(scale=spread, size=(size, latent)))
        truth += [label] * size
    candidates = _unit(rng.normal(size=(50 * outliers + 50, latent)))
    rows.append(candidates[candidates @ shared < -0.3][:outliers])
    truth += [-1] * outliers
    points = np.concatenate(rows) @ basis.T + rng.normal(scale=0.005, size=(len(truth), dim))
    return _unit(points), truth


def ids_for(n: int) -> list[str]:
    return [f"m{i:04d}" for i in range(n)]


def test_recovers_known_blobs_and_leaves_outliers_as_noise() -> None:
    # 4 outliers: fewer than min_cluster_size, so they cannot make a topic of their own
    vectors, truth = blobs([40, 30, 25, 20], outliers=4)
    result = topic_clusters(ids_for(len(truth)), vectors)
    assert len(result.clusters) == 4
    assert result.dims == 32
    truth_arr, labels = np.array(truth), np.array(result.labels)
    blob_rows = truth_arr >= 0
    assert adjusted_rand_score(truth_arr[blob_rows], labels[blob_rows]) > 0.9
    assert adjusted_rand_score(truth_arr, labels) > 0.9
    assert np.all(labels[~blob_rows] == -1)  # the uniform outliers are noise
    assert result.noise == int(np.sum(labels == -1)) >= 4


@pytest.mark.parametrize("dim,reduce_to,expected_dims", [(384, 32, 32), (384, None, 384), (64, 128, 64)])
def test_other_dimensions_and_no_reduction(dim: int, reduce_to: int | None, expected_dims: int) -> None:
    vectors, truth = blobs([30, 25, 20], dim=dim, outliers=4, seed=3)
    result = topic_clusters(ids_for(len(truth)), vectors, reduce_to=reduce_to)
    assert result.dims == expected_dims
    assert adjusted_rand_score(truth, result.labels) > 0.9


def test_deterministic_across_calls() -> None:
    vectors, truth = blobs([35, 30, 30, 12], outliers=4, seed=11)
    ids = ids_for(len(truth))
    first = topic_clusters(ids, vectors)
    second = topic_clusters(list(ids), vectors.copy())
    assert first == second
    assert first.clusters  # not trivially equal


def test_cluster_order_member_order_and_labels() -> None:
    # blob sizes 20, 45, 30, 30 in input order; ids descend with the row, so the later of the two
    # 30-blobs has the smaller ids and must come first: the order is not the input's or HDBSCAN's.
    vectors, truth = blobs([20, 45, 30, 30], outliers=4, seed=5)
    n = len(truth)
    ids = [f"m{n - i:04d}" for i in range(n)]
    result = topic_clusters(ids, vectors)
    assert [c.cluster_id for c in result.clusters] == list(range(len(result.clusters)))
    assert [c.size for c in result.clusters] == [45, 30, 30, 20]
    assert min(result.clusters[1].member_ids) < min(result.clusters[2].member_ids)
    assert set(result.clusters[1].member_ids) == {ids[i] for i, t in enumerate(truth) if t == 3}
    row = {member: i for i, member in enumerate(ids)}
    for cluster in result.clusters:
        assert cluster.size == len(cluster.member_ids)
        members = vectors[[row[m] for m in cluster.member_ids]].astype(np.float64)
        distances = np.linalg.norm(members - members.mean(axis=0), axis=1)
        assert np.all(np.diff(distances) >= 0)  # closest to the centroid first
        assert all(result.labels[row[m]] == cluster.cluster_id for m in cluster.member_ids)
    assert result.noise == result.labels.count(-1) == n - sum(c.size for c in result.clusters)


def test_fewer_points_than_twice_min_cluster_size_gives_no_clusters(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("HDBSCAN must not run")

    monkeypatch.setattr(hdbscan, "HDBSCAN", refuse)
    vectors, truth = blobs([9], seed=1)
    result = topic_clusters(ids_for(9), vectors, min_cluster_size=5)
    assert result == Clustering(clusters=(), noise=9, dims=32, labels=(-1,) * 9)
    assert topic_clusters([], np.zeros((0, 512), np.float32)).labels == ()


def test_rejects_mismatched_input() -> None:
    vectors, _ = blobs([12])
    with pytest.raises(ValueError):
        topic_clusters(ids_for(11), vectors)
    with pytest.raises(ValueError):
        topic_clusters(["same"] * 12, vectors)


def test_agreement() -> None:
    labels = [0, 0, 1, 1, -1, 2, 2, -1]
    assert agreement(labels, labels) == {"ari": 1.0, "ami": 1.0, "noise_agreement": 1.0}
    renamed = [{0: 5, 1: 3, 2: 0, -1: -1}[x] for x in labels]
    assert agreement(labels, renamed)["ari"] == pytest.approx(1.0)
    other = agreement(labels, [0, 1, 0, 1, 2, -1, 2, 2])
    assert other["ari"] < 0.5 and other["ami"] < 0.5
    assert other["noise_agreement"] == pytest.approx(5 / 8)  # rows 4, 5 and 7 differ
    with pytest.raises(ValueError):
        agreement([0, 1], [0])
