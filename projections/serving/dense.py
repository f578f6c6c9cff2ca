"""In-memory cosine search over one namespace's vectors (the serving index's dense half).

The owner keeps the vectors (unit length, one row per slot: int8 codes in the serving index,
:mod:`projections.serving.vectors`; any float32 matrix works too) and a mask of live slots; this
module decides how to search them:

* exact: one matrix-vector product over every slot — below :attr:`IvfParams.flat_min_rows`
  rows (0.8 ms at 10k x 512 int8), and above it when the data has no dominant directions;
* flat: from `flat_min_rows` to `min_rows`, one list holding every row, scanned in the reduced
  space (below) and the best rows re-scored: at 6.7k rows 0.1 ms instead of 0.55 ms exact;
* IVF-flat above it: spherical k-means partitions the rows into ~sqrt(N) lists (their slots,
  and their reduced rows when the reduced scan applies, stored list by list); a query scores the
  centroids, scans the nearest lists until they cover
  :attr:`IvfParams.scan_fraction` of the rows (at least :attr:`IvfParams.min_probe` lists), and
  scans exactly the rows added since the partitioning. A new partitioning is trained, off the
  event loop, when the rows added since the last one exceed :attr:`IvfParams.rebuild_growth`
  of it.
* reduced scan: the scan is memory-bound (at 67k x 512 float32, 10% of the rows is 14 MB per
  query), so when a few principal components hold :attr:`IvfParams.reduce_variance` of the
  variance (sentence embeddings of real text: 128 of USE's 512 dims hold 86% on LoCoMo), the
  lists are scanned in that many dimensions and the best :attr:`IvfParams.rerank` candidates
  re-scored with the full vectors: 1.27 -> 0.48 ms at 67k (a 6% scan), the same recall@10 against exact
  search (LoCoMo turns: 1.000 for 128 dims and 200 candidates). Data without such structure
  (isotropic noise) keeps the full-vector scan.

Training is deterministic (evenly spaced initial centroids, a fixed number of rounds), so the
same rows always give the same lists. recall@10 against the exact search is measured by
`tests/bench/recall.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from projections.serving.topk import top_hits
from projections.serving.vectors import VectorRows, as_rows

__all__ = ["Ivf", "IvfParams", "exact_top", "pooled_top", "train_ivf"]


@dataclass(frozen=True, slots=True)
class IvfParams:
    min_rows: int = 10_000        # partition once a namespace holds this many live rows
    flat_min_rows: int = 1_024    # below min_rows, from this many: one list, scanned in the reduced space
    # share of the rows a query scans (plus the unpartitioned tail), and the fewest lists it probes:
    # recall@10 against the exact search, USE vectors of million.py's texts, was 0.947 at 10k rows
    # (103 lists) and 0.985 at 99k (314 lists) with 6% and 8 lists; 0.994 and 0.996 with these
    scan_fraction: float = 0.10
    min_probe: int = 24
    rebuild_growth: float = 0.15  # retrain once the tail exceeds this share of the partitioned rows
    train_sample: int = 64        # training rows per list (a sample keeps training ~1 s at 100k)
    rounds: int = 8
    reduce_variance: float = 0.85  # scan in the fewest REDUCED_DIMS holding this share of variance (0: off)
    rerank: int = 200             # coarse candidates re-scored with full vectors (at least 4 x k)


#: Dimensions the reduced scan may use; only those below half the vectors' own count pay off.
REDUCED_DIMS = (64, 128, 192, 256)


def exact_top(vectors: VectorRows | np.ndarray, query: np.ndarray, k: int, live: np.ndarray,
              slots: np.ndarray | None = None, size: int | None = None) -> list[tuple[int, float]]:
    """Best `k` (slot, cosine) among `slots` (default: the first `size` rows, all of a matrix), live ones only."""
    rows = as_rows(vectors)
    if slots is None:
        n = min(len(vectors) if size is None else size, len(live))
        idx = np.flatnonzero(live[:n])
        scores = rows.dot(query, 0, n)[idx] if len(idx) * 2 > n else rows.dot_slots(query, idx)
        cand = idx
    else:
        cand = slots[live[slots]]
        scores = rows.dot_slots(query, cand)
    return top_hits(cand, scores, k)


def pooled_top(pooled: list[tuple[VectorRows | np.ndarray, np.ndarray, np.ndarray]], query: np.ndarray, k: int,
               rerank: int) -> list[list[tuple[int, float]]]:
    """Several namespaces' reduced-scan candidates ((vectors, slots, approximate cosines), `Ivf.coarse`):
    the best `rerank` of them all by approximate cosine (as many as one namespace re-scores, not that
    many from each), re-scored with the full vectors; each namespace's best `k` of those. At 100k
    memories in ten namespaces: 2.5 -> 1.7 ms a query, recall@10 against the exact search unchanged
    (0.998), recall@50 0.992 -> 0.990."""
    approx = np.concatenate([a for _, _, a in pooled])
    cut = np.partition(approx, len(approx) - rerank)[len(approx) - rerank] if len(approx) > rerank else -np.inf
    out = []
    for vectors, cand, a in pooled:
        keep = cand[a >= cut]
        out.append(top_hits(keep, as_rows(vectors).dot_slots(query, keep), k) if len(keep) else [])
    return out


@dataclass(slots=True)
class Ivf:
    """A partitioning of the slots [0, covered), lists stored contiguously for scanning: the
    slots of each list (`order`) and, for the reduced scan, their reduced rows (`reduced`)."""

    centroids: np.ndarray         # (nlist, dim), unit length
    offsets: np.ndarray           # (nlist + 1,) into `order` / `reduced`
    order: np.ndarray             # slots (int32), grouped by list
    covered: int                  # slots below this were partitioned
    basis: np.ndarray | None = None     # (dim, d) principal axes of the reduced scan; None: full vectors
    center: np.ndarray | None = None    # (dim,) the mean they were taken around
    reduced: np.ndarray | None = None   # (rows[order] - center) @ basis, float32
    tail: np.ndarray | None = None      # the same for slots covered.. (grown as rows are added)
    tail_rows: int = 0

    def search(self, vectors: VectorRows | np.ndarray, size: int, query: np.ndarray, k: int, live: np.ndarray,
               params: IvfParams) -> list[tuple[int, float]]:
        rows = as_rows(vectors)
        ranges = self._probed(query, params)
        if self.reduced is not None:
            cand, _ = self._reduced_scan(ranges, rows, size, query, max(params.rerank, 4 * k), live)
            return top_hits(cand, rows.dot_slots(query, cand), k)
        parts = [self.order[lo:hi] for lo, hi in ranges]
        if size > self.covered:  # rows added since the partitioning: scanned exactly
            parts.append(np.arange(self.covered, size, dtype=np.int32))
        if not parts:
            return []
        cand = np.concatenate(parts)
        cand = cand[live[cand]]
        return top_hits(cand, rows.dot_slots(query, cand), k)

    def coarse(self, vectors: VectorRows | np.ndarray, size: int, query: np.ndarray, k: int, live: np.ndarray,
               params: IvfParams) -> tuple[np.ndarray, np.ndarray] | None:
        """The reduced scan's best `max(rerank, 4k)` live slots and their approximate cosines (the
        reduced score plus q . center: comparable across partitions), not re-scored; None when
        this partitioning scans full vectors."""
        if self.reduced is None:
            return None
        assert self.center is not None
        cand, approx = self._reduced_scan(self._probed(query, params), as_rows(vectors), size, query,
                                          max(params.rerank, 4 * k), live)
        return cand, approx + np.float32(query @ self.center)

    def _probed(self, query: np.ndarray, params: IvfParams) -> list[tuple[int, int]]:
        """The ranges of `order` of the lists a query scans: the nearest until `scan_fraction`."""
        nlist = len(self.centroids)
        if nlist == 1:
            return [(0, int(self.offsets[1]))] if self.offsets[1] > 0 else []
        lists = np.argsort(-(self.centroids @ query), kind="stable")
        want = max(params.scan_fraction * len(self.order), 1.0)
        sizes = np.diff(self.offsets)[lists]
        probe = max(int(np.searchsorted(np.cumsum(sizes), want)) + 1, min(params.min_probe, nlist))
        probed = lists[:probe]
        return [(lo, hi) for lo, hi in zip(self.offsets[probed].tolist(), self.offsets[probed + 1].tolist())
                if hi > lo]

    def _reduced_scan(self, ranges: list[tuple[int, int]], rows: VectorRows, size: int, query: np.ndarray,
                      rerank: int, live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The probed lists and the tail scanned in the reduced space: the best `rerank` live
        slots and their reduced scores, to be re-scored with the full vectors. (q . v = q . center
        + q . (v - center): the first term is the same for every row, so the reduced scores rank
        like the full ones.)"""
        assert self.reduced is not None and self.basis is not None
        q = query @ self.basis
        slots = [self.order[lo:hi] for lo, hi in ranges]
        coarse = [self.reduced[lo:hi] @ q for lo, hi in ranges]
        if size > self.covered:
            slots.append(np.arange(self.covered, size, dtype=np.int32))
            coarse.append(self._tail(rows, size) @ q)
        if not slots:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        cand, scores = (slots[0], coarse[0]) if len(slots) == 1 else (np.concatenate(slots), np.concatenate(coarse))
        ok = live[cand]
        if not ok.all():
            cand, scores = cand[ok], scores[ok]
        if len(cand) > rerank:
            keep = np.argpartition(-scores, rerank - 1)[:rerank]
            cand, scores = cand[keep], scores[keep]
        return cand, scores

    def _tail(self, rows: VectorRows, size: int) -> np.ndarray:
        """Reduced rows of slots covered..size, projecting only the rows added since last time
        (rows below a partition's size never change); capacity doubles as it grows."""
        assert self.basis is not None and self.center is not None
        want = size - self.covered
        if want > self.tail_rows:
            if self.tail is None or len(self.tail) < want:
                grown = np.empty((max(want, 2 * (len(self.tail) if self.tail is not None else 0), 256),
                                  self.basis.shape[1]), dtype=np.float32)
                grown[:self.tail_rows] = self.tail[:self.tail_rows] if self.tail is not None else grown[:0]
                self.tail = grown
            lo = self.covered + self.tail_rows
            self.tail[self.tail_rows:want] = (rows.take(np.arange(lo, size)) - self.center) @ self.basis
            self.tail_rows = want
        assert self.tail is not None
        return self.tail[:want]

    def stale(self, size: int, params: IvfParams) -> bool:
        return (size - self.covered) > params.rebuild_growth * max(self.covered, 1)


def _normalised(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return m / norms


_TRAIN_BLOCK = 8192
PCA_SAMPLE = 4096


def train_ivf(vectors: VectorRows | np.ndarray, live: np.ndarray, params: IvfParams,
              size: int | None = None, lists: int | None = None) -> Ivf:
    """Partition the live rows among the first `size` (all of a matrix) of `vectors` (rows below
    `size` must not change meanwhile: the caller trains over a snapshot) into `lists` lists
    (default ~sqrt(N); 1: the flat reduced scan of a namespace below `min_rows`)."""
    rows = as_rows(vectors)
    covered = len(vectors) if size is None else size
    slots = np.flatnonzero(live[:covered]).astype(np.int32)
    n = len(slots)
    nlist = lists or max(1, int(round(math.sqrt(n))))
    # the principal axes want a few thousand rows whatever the number of lists
    sample_n = min(n, max(nlist * params.train_sample, PCA_SAMPLE))
    sample = rows.take(slots[np.linspace(0, n - 1, sample_n).astype(np.int64)]) if n else \
        np.zeros((0, rows.dim), dtype=np.float32)
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
    for lo in range(0, n, _TRAIN_BLOCK):
        assign[lo:lo + _TRAIN_BLOCK] = np.argmax(rows.take(slots[lo:lo + _TRAIN_BLOCK]) @ centroids.T, axis=1)
    order = slots[np.argsort(assign, kind="stable")]
    offsets = np.zeros(nlist + 1, dtype=np.int64)
    np.cumsum(np.bincount(assign, minlength=nlist), out=offsets[1:])
    ivf = Ivf(centroids=centroids.astype(np.float32), offsets=offsets, order=order, covered=covered)
    axes = _principal_axes(sample, params.reduce_variance)
    if axes is not None:
        ivf.center, ivf.basis = axes
        reduced = np.empty((n, ivf.basis.shape[1]), dtype=np.float32)
        for lo in range(0, n, _TRAIN_BLOCK):
            reduced[lo:lo + _TRAIN_BLOCK] = (rows.take(order[lo:lo + _TRAIN_BLOCK]) - ivf.center) @ ivf.basis
        ivf.reduced = reduced
    return ivf


def _principal_axes(sample: np.ndarray, share: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(center, basis) of the fewest REDUCED_DIMS principal axes of `sample` holding `share` of
    its variance, or None (off, too few rows, or no such dimension below half the vectors')."""
    dim = sample.shape[1] if sample.ndim == 2 else 0
    if share <= 0 or len(sample) < 2 * dim or dim == 0:
        return None
    center = sample.mean(axis=0)
    x = sample - center
    values, vectors = np.linalg.eigh((x.T @ x).astype(np.float64))   # ascending eigenvalues
    values, vectors = values[::-1], vectors[:, ::-1]
    total = float(values.sum())
    if total <= 0:
        return None
    held = np.cumsum(values) / total
    for d in REDUCED_DIMS:
        if 2 * d > dim:
            return None
        if held[d - 1] >= share:
            return center.astype(np.float32), np.ascontiguousarray(vectors[:, :d], dtype=np.float32)
    return None
