"""Topic clusters of memory vectors: a truncated SVD down to a few dozen dimensions, then HDBSCAN.

Method. The input rows are L2-normalised sentence embeddings (512-d USE, 384-d e5), so euclidean
distance between them is a monotone function of cosine distance. HDBSCAN in hundreds of dimensions
is slow (space-partitioning trees do not prune there, so every core distance and every MST step
is a brute-force scan), while the topic structure of such embeddings lives in a few dozen leading
directions. So:

1. when ``reduce_to`` is set and smaller than the vector dimension, project the rows onto their
   first ``reduce_to`` right singular vectors (a truncated SVD of the uncentred rows, via numpy
   ``eigh`` of the Gram matrix: no randomness; signs do not matter to distances) and L2-normalise
   the projections again, so that distances stay angular;
2. run ``hdbscan.HDBSCAN`` over those rows: euclidean, Prim's MST over exact distances (the
   same tree as the O(n^2)-memory "generic" algorithm, in O(n) memory), one core, and "leaf"
   cluster selection: tight topics. The default "eom" selection tends to lump most of a memory
   store into one giant cluster (81% of 7,831 LoCoMo texts in full dimensions) and swings with
   ``reduce_to``; leaf clusters are far more stable across it (tests/bench/consolidation.py);
3. renumber HDBSCAN's clusters so that nothing depends on its internal numbering: cluster ids
   0..k-1 by size, largest first, ties by the smallest member id; members of a cluster ordered by
   distance to the cluster's centroid (the mean of its input vectors), closest first, ties by id.

Fewer points than ``2 * min_cluster_size`` give no clusters (all noise) without running HDBSCAN.
The function is pure: same ids and vectors in the same order, same result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import hdbscan
import numpy as np
from sklearn.metrics import adjusted_mutual_info_score, adjusted_rand_score

__all__ = ["Cluster", "Clustering", "agreement", "topic_clusters"]

NOISE = -1


@dataclass(frozen=True, slots=True)
class Cluster:
    """One topic: its members, closest to the centroid first."""

    cluster_id: int  # 0..k-1, ordered by size descending then by smallest member id
    member_ids: tuple[str, ...]  # sorted by distance to the cluster's centroid (closest first), ties by id
    size: int


@dataclass(frozen=True, slots=True)
class Clustering:
    """The clusters of one call, and the label of every input point."""

    clusters: tuple[Cluster, ...]
    noise: int  # points HDBSCAN left unclustered
    dims: int  # dimensions clustered in (after reduction)
    labels: tuple[int, ...]  # per input point, in input order: its cluster_id, or -1


def topic_clusters(ids: list[str], vectors: np.ndarray, *, min_cluster_size: int = 5,
                   min_samples: int | None = None, reduce_to: int | None = 32) -> Clustering:
    """Cluster `vectors` (one L2-normalised row per id) into topics; see the module doc."""
    points = _checked(ids, vectors, min_cluster_size, reduce_to)
    n, dim = points.shape
    if n < 2 * min_cluster_size:
        dims = dim if reduce_to is None else min(reduce_to, dim)
        return Clustering(clusters=(), noise=n, dims=dims, labels=(NOISE,) * n)
    reduced = _reduce(points, reduce_to)
    raw = _hdbscan_labels(reduced, min_cluster_size, min_samples)
    return _relabel(ids, points, raw, reduced.shape[1])


def agreement(a: Sequence[int], b: Sequence[int]) -> dict[str, float]:
    """Agreement of two labelings of the same points: adjusted Rand index and adjusted mutual information (sklearn), plus the fraction of points that both call noise or both cluster.

    Keys: ``ari``, ``ami``, ``noise_agreement``. In ARI and AMI noise (-1) counts as one more
    label, as usual when comparing HDBSCAN runs."""
    if len(a) != len(b):
        raise ValueError(f"labelings of different lengths: {len(a)} and {len(b)}")
    if not a:
        return {"ari": 1.0, "ami": 1.0, "noise_agreement": 1.0}
    left = np.asarray(a, dtype=np.int64)
    right = np.asarray(b, dtype=np.int64)
    same_noise = float(np.mean((left == NOISE) == (right == NOISE)))
    return {"ari": float(adjusted_rand_score(left, right)),
            "ami": float(adjusted_mutual_info_score(left, right)),
            "noise_agreement": same_noise}


def _checked(ids: list[str], vectors: np.ndarray, min_cluster_size: int, reduce_to: int | None) -> np.ndarray:
    """The vectors as float64 rows, after checking the arguments."""
    points = np.asarray(vectors, dtype=np.float64)
    if points.ndim != 2 or points.shape[0] != len(ids):
        raise ValueError(f"expected one vector row per id: {len(ids)} ids, vectors of shape {points.shape}")
    if not np.all(np.isfinite(points)):
        raise ValueError("vectors must be finite")
    if len(set(ids)) != len(ids):
        raise ValueError("ids must be distinct")
    if min_cluster_size < 2:
        raise ValueError("min_cluster_size must be at least 2")
    if reduce_to is not None and reduce_to < 1:
        raise ValueError("reduce_to must be at least 1 (or None)")
    return points


def _reduce(points: np.ndarray, reduce_to: int | None) -> np.ndarray:
    """The rows projected onto their first `reduce_to` right singular vectors, re-normalised.

    Uncentred (a truncated SVD, not a centred PCA): centring then re-normalising would measure
    angles around the data's mean instead of the origin, and pull apart topics that sit close
    together on one side of the sphere."""
    if reduce_to is None or reduce_to >= points.shape[1]:
        return points
    _, eigenvectors = np.linalg.eigh(points.T @ points)  # eigenvalues ascending
    projected = points @ eigenvectors[:, ::-1][:, :reduce_to]
    norms = np.linalg.norm(projected, axis=1, keepdims=True)
    return np.asarray(projected / np.where(norms > 0, norms, 1.0), dtype=np.float64)


def _hdbscan_labels(points: np.ndarray, min_cluster_size: int, min_samples: int | None) -> np.ndarray:
    """HDBSCAN's label per row (-1: noise), in its own numbering."""
    clusterer = hdbscan.HDBSCAN(min_cluster_size=min_cluster_size, min_samples=min_samples,
                                metric="euclidean", algorithm="prims_kdtree", core_dist_n_jobs=1,
                                cluster_selection_method="leaf")
    return np.asarray(clusterer.fit_predict(points), dtype=np.int64)


def _relabel(ids: list[str], points: np.ndarray, raw: np.ndarray, dims: int) -> Clustering:
    """HDBSCAN's labels renumbered by the module's ordering rules."""
    groups = [np.flatnonzero(raw == label) for label in np.unique(raw[raw != NOISE])]
    members = [_by_centroid_distance(ids, points, rows) for rows in groups]
    members.sort(key=lambda m: (-len(m), min(m)))
    position = {member: row for row, member in enumerate(ids)}
    labels = [NOISE] * len(ids)
    clusters = []
    for cluster_id, member_ids in enumerate(members):
        for member in member_ids:
            labels[position[member]] = cluster_id
        clusters.append(Cluster(cluster_id=cluster_id, member_ids=member_ids, size=len(member_ids)))
    return Clustering(clusters=tuple(clusters), noise=int(np.sum(raw == NOISE)), dims=dims,
                      labels=tuple(labels))


def _by_centroid_distance(ids: list[str], points: np.ndarray, rows: np.ndarray) -> tuple[str, ...]:
    """The ids of `rows`, closest to their centroid (in the input space) first, ties by id."""
    members = points[rows]
    distances = np.linalg.norm(members - members.mean(axis=0), axis=1)
    order = sorted(range(len(rows)), key=lambda i: (float(distances[i]), ids[rows[i]]))
    return tuple(ids[rows[i]] for i in order)
