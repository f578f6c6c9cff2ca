"""PassiveValidator matching (seed spec 3.3.4): does a new episode corroborate a distilled memory?

Each commit compares the current episode (``new_text``) with an existing distilled memory
(``old_text``); the first level that fires wins:

* **P1** (+0.15, immediate): the texts share an entity (:mod:`projections.text.entities`, compared by
  ``kind:norm``). Every kind counts -- url, ip, port, path, version, identifier, name, term --
  except entities too common to corroborate anything alone (:data:`P1_MIN_LENGTH`): a ``term``
  or ``name`` shorter than 3 characters (配置, 问题, 版本; AI, UI). Those still feed P2/P3.
* **P2** (+0.15, immediate): >= 2 shared meaningful words, pooled across languages: English words
  of >= 3 characters with a letter, not stop words (``projections.text.lexical`` lists plus a few fillers),
  compared Snowball-stemmed (``listens`` = ``listen``); Chinese bigrams taken inside the pieces
  that :func:`projections.text.entities.cjk_pieces` leaves after splitting on function words and
  characters, so no bigram is made of function characters (我们, 的是).
* **P3**: overlap coefficient ``|A & B| / min(|A|, |B|)`` of character n-gram sets. Text is
  NFKC-normalised and lower-cased; n-grams are taken inside each CJK run or Latin word, never
  across whitespace or punctuation. CJK runs give character bigrams, as the spec says, except
  bigrams of two function characters (我们). Latin words give character *trigrams*
  (:data:`LATIN_GRAM`); stop words and shorter words give none: on 300 unrelated pairs of
  short English sentences, bigrams put 16% at >= 0.25 and 49% at >= 0.12, trigrams 2% and 6%,
  while ten paraphrase pairs stayed >= 0.38 either way. Texts without a single gram compare
  their character sets instead. ``>= P3_STRONG`` -> ``"P3"`` (+0.15, immediate);
  ``>= P3_WEAK`` -> ``"P3_partial"`` (delta 0.0: the caller counts partials in Redis and adds
  :data:`P3_ACCUMULATED_DELTA` once :data:`P3_PARTIALS_NEEDED` have accumulated).

Identical non-blank texts always match (at worst P3 with overlap 1.0); blank text never does.
Confidence after a delta is capped at :data:`CONFIDENCE_CAP` (:func:`bump`). Only the first
``projections.text.entities.MAX_CHARS`` characters of each text are read. To compare one episode with
many memories, compute :func:`features` once per text and call :func:`match_features`.

Pure and deterministic: no clock, no randomness, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final

from projections.text.entities import FUNCTION_CHARS, MAX_CHARS, cjk_pieces, extract
from projections.text.lexical import QUERY_STOP_WORDS, STOP_WORDS, terms

__all__ = [
    "CONFIDENCE_CAP", "P1_DELTA", "P2_DELTA", "P3_ACCUMULATED_DELTA", "P3_DELTA", "P3_PARTIALS_NEEDED",
    "P3_STRONG", "P3_WEAK", "LATIN_GRAM", "Features", "Match", "bump", "features", "match", "match_features",
    "overlap_coefficient",
]

P1_DELTA: Final = 0.15
P2_DELTA: Final = 0.15
P3_DELTA: Final = 0.15
P3_ACCUMULATED_DELTA: Final = 0.10
P3_STRONG: Final = 0.25
P3_WEAK: Final = 0.12
P3_PARTIALS_NEEDED: Final = 3
CONFIDENCE_CAP: Final = 1.0

P2_MIN_SHARED: Final = 2
LATIN_GRAM: Final = 3
#: Entity kinds too generic to count alone at P1 below this many characters of ``norm``.
P1_MIN_LENGTH: Final[dict[str, int]] = {"term": 3, "name": 3}

_CJK: Final = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_RUN: Final = re.compile(rf"[{_CJK}]+|([^\W_{_CJK}]+)")  # group 1: a non-CJK word
_STOP: Final = STOP_WORDS | QUERY_STOP_WORDS | frozenset(
    """
    also just very really quite like get got use used using make made want wants one two new now then
    than there here out all more most some any only into over yes not but and you your our we i me my
    let lets thing things way still yet too well
    """.split()
)
_EVIDENCE_MAX: Final = 10


@dataclass(frozen=True)
class Match:
    level: str                  # "P1" | "P2" | "P3" | "P3_partial"
    delta: float                # confidence to add now (0.0 for a partial)
    evidence: tuple[str, ...]   # shared entity keys / words / "overlap=0.312" and shared n-grams


@dataclass(frozen=True)
class Features:
    """What matching needs from one text; compute once, compare with many."""

    entities: tuple[str, ...]   # P1-eligible ``kind:norm`` keys, first-appearance order
    words: tuple[str, ...]      # P2 words (English stems, Chinese bigrams), first-appearance order
    grams: frozenset[str]       # P3 character n-grams
    chars: frozenset[str]       # P3 fallback for texts without a gram


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text[:MAX_CHARS]).lower()


def _p1_keys(text: str) -> tuple[str, ...]:
    return tuple(e.key for e in extract(text) if len(e.norm) >= P1_MIN_LENGTH.get(e.kind, 1))


def _p2_words(norm: str) -> tuple[str, ...]:
    found: list[tuple[int, str]] = []
    for m in _RUN.finditer(norm):
        word = m.group(1)
        if word and len(word) >= 3 and word not in _STOP and not word.isdigit():
            found.extend((m.start(), stem) for stem in terms(word))
    offset = 0
    for piece in cjk_pieces(norm):  # pieces come in text order
        offset = norm.index(piece, offset)
        found.extend((offset + i, piece[i : i + 2]) for i in range(len(piece) - 1))
        offset += len(piece)
    return tuple(dict.fromkeys(w for _, w in sorted(found)))


def _grams(norm: str) -> frozenset[str]:
    grams: set[str] = set()
    for m in _RUN.finditer(norm):
        if (word := m.group(1)) is None:  # a CJK run
            run = m.group()
            grams.update(g for g in (run[i : i + 2] for i in range(len(run) - 1)) if not set(g) <= FUNCTION_CHARS)
        elif word not in _STOP:
            grams.update(word[i : i + LATIN_GRAM] for i in range(len(word) - LATIN_GRAM + 1))
    return frozenset(grams)


def features(text: str) -> Features:
    """The P1/P2/P3 features of ``text``."""
    norm = _normalise(text)
    return Features(
        entities=_p1_keys(text),
        words=_p2_words(norm),
        grams=_grams(norm),
        chars=frozenset(c for c in norm if not c.isspace()),
    )


def _overlap(a: Features, b: Features) -> float:
    x, y = (a.grams, b.grams) if a.grams or b.grams else (a.chars, b.chars)
    smaller = min(len(x), len(y))
    return len(x & y) / smaller if smaller else 0.0


def overlap_coefficient(a: str, b: str) -> float:
    """``|A & B| / min(|A|, |B|)`` over the character n-grams of two texts (see module docs)."""
    return _overlap(features(a), features(b))


def match_features(new: Features, old: Features) -> Match | None:
    """The first level at which ``new`` corroborates ``old``, or None."""
    old_entities = set(old.entities)
    if shared := [k for k in new.entities if k in old_entities]:
        return Match("P1", P1_DELTA, tuple(shared[:_EVIDENCE_MAX]))
    old_words = set(old.words)
    if len(shared := [w for w in new.words if w in old_words]) >= P2_MIN_SHARED:
        return Match("P2", P2_DELTA, tuple(shared[:_EVIDENCE_MAX]))
    coefficient = _overlap(new, old)
    if coefficient < P3_WEAK:
        return None
    common = sorted(new.grams & old.grams)[:_EVIDENCE_MAX]
    evidence = (f"overlap={coefficient:.3f}", *common)
    if coefficient >= P3_STRONG:
        return Match("P3", P3_DELTA, evidence)
    return Match("P3_partial", 0.0, evidence)


def match(new_text: str, old_text: str) -> Match | None:
    """Does episode ``new_text`` corroborate distilled ``old_text``? P1, then P2, then P3."""
    return match_features(features(new_text), features(old_text))


def bump(confidence: float, delta: float) -> float:
    """``confidence + delta``, capped at :data:`CONFIDENCE_CAP`."""
    return min(CONFIDENCE_CAP, confidence + delta)
