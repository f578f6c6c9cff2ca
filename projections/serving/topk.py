"""Top-k selection over score arrays, shared by the serving index's dense and lexical search."""

from __future__ import annotations

from operator import itemgetter

import numpy as np

__all__ = ["best_first", "top_hits"]

_ID, _SCORE = itemgetter(0), itemgetter(1)


def best_first(hits: list[tuple[str, float]]) -> None:
    """Sort (id, score) pairs as by the key (-score, id), with two C-level key sorts instead of a
    Python one (the sort is stable, also with reverse=True: ties keep their id order)."""
    hits.sort(key=_ID)
    hits.sort(key=_SCORE, reverse=True)


def top_hits(cand: np.ndarray | None, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The `k` best positive-or-not (slot, score) of parallel arrays, best first (ties by slot).
    With `cand` None the slots are the indices of `scores`, and only positive scores count."""
    if cand is None:
        if len(scores) > 8 * k and len(scores) > 4096:
            above = _above_sampled_threshold(scores, k)
            if above is not None:
                return top_hits(above, scores[above], k)
        cand = np.flatnonzero(scores > 0)
        return top_hits(cand, scores[cand], k)
    if len(cand) == 0 or k <= 0:
        return []
    if len(cand) > 8 * k and len(cand) > 4096:
        above = _above_sampled_threshold(scores, k)
        if above is not None:
            cand, scores = cand[above], scores[above]
    if len(cand) > k:
        part = np.argpartition(-scores, k - 1)[:k]
        cand, scores = cand[part], scores[part]
    order = np.lexsort((cand, -scores))   # best first, ties by slot (as sorting by (-score, slot))
    return list(zip(cand[order].tolist(), scores[order].tolist()))


def _above_sampled_threshold(scores: np.ndarray, k: int) -> np.ndarray | None:
    """Indices of the scores above a threshold read off an evenly spaced sample, when at least
    `k` of them (positive) pass it: then the `k` best are among them. None otherwise."""
    step = len(scores) // 1024
    sample = scores[::step]
    m = min(len(sample), 4 * (k * len(sample) // len(scores) + 1))
    threshold = max(float(np.partition(sample, len(sample) - m)[len(sample) - m]), 0.0)
    above = np.flatnonzero(scores > threshold)
    return above if len(above) >= k else None
