"""The features of a pair of memories that the learned pair judge reads (`commands.conflicts.judge`).

Pure: two sides' text signals and the cosine of their vectors in, a fixed-length list of floats out,
in :data:`FEATURE_NAMES` order (the judge's trees are keyed by these names, so a change here refuses
old trees). Who wrote the memories (agent, source, tier) is left out on purpose: the labels' rules
use it to tell an update from a conflict (`compare.judge` applies them), and trees that saw it
learned the labelling rule instead of the texts (two agents with one source looked like no conflict).
"""

from __future__ import annotations

import re
from typing import Final

from commands.conflicts.compare import Side
from commands.reactions.validation_match import _overlap

_CJK: Final = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")

FEATURE_NAMES: Final = (
    "cosine", "overlap", "word_jaccard", "values_both", "values_differ", "values_shared", "values_only_new",
    "values_only_old", "negation_asymmetry", "negation_both", "cue_new", "cue_old", "entities_shared",
    "entities_only_new", "entities_only_old", "length_ratio", "scripts_differ", "differ_x_cosine",
    "duplicate_like_x_cosine", "duplicate_like_x_overlap", "cue_x_differ", "subject_overlap", "subject_known",
    "subject_differs",
    "subject_differs_x_differ", "bias",
)


def _cjk(text_words: frozenset[str]) -> bool:
    return any(_CJK.search(w) for w in text_words)


def pair_features(new: Side, old: Side, cosine: float) -> list[float]:
    a, b = old.signals, new.signals
    overlap = _overlap(a.features, b.features)
    union = a.words | b.words
    jaccard = len(a.words & b.words) / len(union) if union else 0.0
    both = bool(a.values and b.values)
    differ = both and a.values != b.values
    shared = len(a.values & b.values)
    neg_asym = (a.negations > 0) != (b.negations > 0)
    ea, eb = set(a.features.entities), set(b.features.entities)
    la, lb = len(a.features.chars), len(b.features.chars)
    duplicate_like = not differ and not neg_asym
    known = bool(a.subject and b.subject)
    subject_overlap = len(a.subject & b.subject) / len(a.subject | b.subject) if known else 0.0
    subject_differs = known and not (a.subject & b.subject)
    return [
        cosine, overlap, jaccard, float(both), float(differ), min(shared, 3) / 3, float(bool(b.values - a.values)),
        float(bool(a.values - b.values)), float(neg_asym), float(a.negations > 0 and b.negations > 0),
        float(b.cue), float(a.cue), min(len(ea & eb), 3) / 3, float(bool(eb - ea)), float(bool(ea - eb)),
        min(la, lb) / max(la, lb, 1), float(_cjk(a.words) != _cjk(b.words)),
        cosine * float(differ or neg_asym), cosine * float(duplicate_like), overlap * float(duplicate_like),
        float(b.cue and (differ or neg_asym)), subject_overlap, float(known), float(subject_differs), float(subject_differs and (differ or neg_asym)), 1.0,
    ]
