"""In-memory cosine search over one namespace's vectors (the serving index's dense half).

The owner keeps the vectors (unit length, one row per slot) and a mask of live slots; this
module decides how to search them:

* exact: one matrix-vector product over every slot — below :attr:`IvfParams.min_rows` rows
  (about 1 ms at 10k x 512);
* IVF-flat above it: spherical k-means partitions the rows into ~sqrt(N) lists, stored
  contiguously; a query scores the centroids, scans the nearest lists until they cover
  :attr:`IvfParams.scan_fraction` of the rows (at least :attr:`IvfParams.min_probe` lists), and
  scans exactly the rows added since the partitioning. A new partitioning is trained, off the
  event loop, when the rows added since the last one exceed :attr:`IvfParams.rebuild_growth`
  of it.

Training is deterministic (evenly spaced initial centroids, a fixed number of rounds), so the
same rows always give the same lists. recall@10 against the exact search is measured by
`tests/bench/recall.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from projections.topk import top_hits

__all__ = ["Ivf", "IvfParams", "exact_top", "train_ivf"]


@dataclass(frozen=True, slots=True)
class IvfParams:
    min_rows: int = 10_000        # partition once a namespace holds this many live rows
    scan_fraction: float = 0.06   # share of the rows a query scans (plus the unpartitioned tail)
    min_probe: int = 8
    rebuild_growth: float = 0.15  # retrain once the tail exceeds this share of the partitioned rows
    train_sample: int = 64        # training rows per list (a sample keeps training ~1 s at 100k)
    rounds: int = 8


def exact_top(vectors: np.ndarray, query: np.ndarray, k: int, live: np.ndarray,
              slots: np.ndarray | None = None) -> list[tuple[int, float]]:
    """Best `k` (slot, cosine) among `slots` (default: every row of `vectors`), live ones only."""
    if slots is None:
        n = min(len(vectors), len(live))
        scores = vectors[:n] @ query
        ok = live[:n]
        idx = np.flatnonzero(ok)
        scores, cand = scores[idx], idx
    else:
        slots = slots[live[slots]]
        scores, cand = vectors[slots] @ query, slots
    return top_hits(cand, scores, k)


@dataclass(slots=True)
class Ivf:
    """A partitioning of the slots [0, covered): lists stored contiguously for scanning."""

    centroids: np.ndarray         # (nlist, dim), unit length
    offsets: np.ndarray           # (nlist + 1,) into `order` / `packed`
    order: np.ndarray             # slots, grouped by list
    packed: np.ndarray            # vectors[order]: each list is one contiguous block
    covered: int                  # slots below this were partitioned

    def search(self, vectors: np.ndarray, size: int, query: np.ndarray, k: int, live: np.ndarray,
               params: IvfParams) -> list[tuple[int, float]]:
        nlist = len(self.centroids)
        lists = np.argsort(-(self.centroids @ query), kind="stable")
        want = max(params.scan_fraction * len(self.order), 1.0)
        sizes = np.diff(self.offsets)[lists]
        probe = max(int(np.searchsorted(np.cumsum(sizes), want)) + 1, min(params.min_probe, nlist))
        cand_parts, score_parts = [], []
        for li in lists[:probe]:
            lo, hi = int(self.offsets[li]), int(self.offsets[li + 1])
            if hi > lo:
                cand_parts.append(self.order[lo:hi])
                score_parts.append(self.packed[lo:hi] @ query)
        if size > self.covered:  # rows added since the partitioning: scanned exactly
            tail = np.arange(self.covered, size)
            cand_parts.append(tail)
            score_parts.append(vectors[self.covered:size] @ query)
        if not cand_parts:
            return []
        cand = np.concatenate(cand_parts)
        scores = np.concatenate(score_parts)
        ok = live[cand]
        return top_hits(cand[ok], scores[ok], k)

    def stale(self, size: int, params: IvfParams) -> bool:
        return (size - self.covered) > params.rebuild_growth * max(self.covered, 1)


def _normalised(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return m / norms


def train_ivf(vectors: np.ndarray, live: np.ndarray, params: IvfParams) -> Ivf:
    """Partition the live rows of `vectors` (a snapshot: the caller must not mutate them meanwhile)."""
    covered = len(vectors)
    slots = np.flatnonzero(live[:covered])
    n = len(slots)
    nlist = max(1, int(round(math.sqrt(n))))
    sample_n = min(n, nlist * params.train_sample)
    sample = vectors[slots[np.linspace(0, n - 1, sample_n).astype(np.int64)]] if n else vectors[:0]
    centroids = sample[np.linspace(0, len(sample) - 1, nlist).astype(np.int64)].copy() if n else sample
    for _ in range(params.rounds if n else 0):
        assign = np.argmax(sample @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, sample)
        counts = np.bincount(assign, minlength=nlist)
        empty = counts == 0
        sums[empty] = centroids[empty]  # an empty list keeps its centroid
        centroids = _normalised(sums)
    assign = np.empty(n, dtype=np.int64)
    for lo in range(0, n, 8192):
        assign[lo:lo + 8192] = np.argmax(vectors[slots[lo:lo + 8192]] @ centroids.T, axis=1)
    by_list = np.argsort(assign, kind="stable")
    order = slots[by_list]
    offsets = np.zeros(nlist + 1, dtype=np.int64)
    np.cumsum(np.bincount(assign, minlength=nlist), out=offsets[1:])
    return Ivf(centroids=centroids.astype(np.float32), offsets=offsets, order=order,
               packed=np.ascontiguousarray(vectors[order]), covered=covered)
