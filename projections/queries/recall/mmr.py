"""Maximal Marginal Relevance (seed 2.6, recall step 4): diversify the reranked candidates.

At each step the candidate maximising

    MMR = (1 - λ) · relevance + λ · (1 - max_sim_to_selected)

is selected, with λ = ``diversity`` in [0, 1]: 0 keeps the pure relevance order, 0.5 (the
default) balances relevance and novelty, 1 maximises diversity. The first pick is always the
most relevant candidate (nothing is selected yet, so novelty is undefined).

Relevance should be on a scale comparable to cosine similarity, e.g. reranker scores in [0, 1];
vectors must be L2-normalised rows so that similarity is a dot product.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["DEFAULT_DIVERSITY", "mmr"]

DEFAULT_DIVERSITY = 0.5


def mmr(
    relevance: np.ndarray, vectors: np.ndarray, k: int, diversity: float = DEFAULT_DIVERSITY
) -> list[int]:
    """Return up to ``k`` candidate indices in selection order.

    ``relevance`` is a ``(n,)`` array, ``vectors`` an ``(n, d)`` array of unit rows. Ties are
    broken by input order (the lower index wins), so the result is deterministic.
    Raises ``ValueError`` on a ``diversity`` outside [0, 1], a negative ``k``, mismatched
    shapes or non-finite relevance.
    """
    valid = isinstance(diversity, (int, float)) and math.isfinite(diversity) and 0.0 <= diversity <= 1.0
    if not valid:
        raise ValueError(f"diversity must be in [0, 1], got {diversity!r}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    rel = np.asarray(relevance, dtype=np.float64)
    vecs = np.asarray(vectors, dtype=np.float64)
    if rel.ndim != 1:
        raise ValueError(f"relevance must be 1-D, got shape {rel.shape}")
    n = rel.shape[0]
    if vecs.ndim != 2 or vecs.shape[0] != n:
        raise ValueError(f"vectors must have shape ({n}, d), got {vecs.shape}")
    if not np.all(np.isfinite(rel)):
        raise ValueError("relevance contains non-finite values")
    k = min(k, n)
    if k == 0:
        return []

    lam = float(diversity)
    first = int(np.argmax(rel))  # argmax returns the first maximum: ties go to input order
    selected = [first]
    available = np.ones(n, dtype=bool)
    available[first] = False
    max_sim = vecs @ vecs[first]
    while len(selected) < k:
        scores = (1.0 - lam) * rel + lam * (1.0 - max_sim)
        scores[~available] = -np.inf
        pick = int(np.argmax(scores))
        selected.append(pick)
        available[pick] = False
        np.maximum(max_sim, vecs @ vecs[pick], out=max_sim)
    return selected
