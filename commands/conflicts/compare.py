"""Two memories, compared (seed 3.3.2 and 6.2): the same fact again, an update, a contradiction, or
nothing to say.

:func:`judge` decides with the learned pair judge (`commands.conflicts.judge`: two gradient-boosted
tree ensembles over `commands.conflicts.pair_features`) and names the relation by the labels' rules.
Pure: the two texts' signals (`commands.conflicts.text_signals`), the cosine of their vectors and who
wrote them, never a clock. `tests/bench/conflicts.py` measures it on held-out pairs.

- **duplicate**: the same fact again; from two agents with different tiers it is an **importance**
  conflict instead (seed 3.3.2 type 3).
- **replacement**: the texts are incompatible (another value, or one denies the other) and the newer
  one says it updates ("now", "changed to", "不再", "改为"...) or comes from the same agent and source.
- **conflict**: incompatible without that: **entity** (same subject, another value) or **negation**.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from commands.conflicts.text_signals import Signals
from commands.reactions.validation_match import _overlap

if TYPE_CHECKING:
    from commands.conflicts.judge import PairModel

DUPLICATE: Final = "duplicate"
REPLACEMENT: Final = "replacement"
CONFLICT: Final = "conflict"
NONE: Final = "none"


@dataclass(frozen=True, slots=True)
class Side:
    """One memory as the comparison sees it."""

    memory_id: str
    signals: Signals
    agent: str
    source: str
    tier: str = "normal"
    distilled: bool = False


@dataclass(frozen=True, slots=True)
class Verdict:
    relation: str          # duplicate | replacement | conflict | none
    kind: str = ""         # conflicts: entity | negation | importance; replacements: cue | same_source
    confidence: float = 0.0
    cosine: float = 0.0
    overlap: float = 0.0
    evidence: str = ""


def _kind_of(new: Side, old: Side) -> str:
    a, b = old.signals, new.signals
    if (a.negations > 0) != (b.negations > 0) and not (a.values and b.values and a.values != b.values):
        return "negation"
    return "entity"


def _evidence(a: Signals, b: Signals) -> str:
    """What differs between two texts, for the conflict's `evidence`."""
    if a.values and b.values and a.values != b.values:
        return f"values {sorted(a.values)} vs {sorted(b.values)}"
    if (a.negations > 0) != (b.negations > 0):
        return "one denies what the other says"
    return "they say different things"


def judge(new: Side, old: Side, cosine: float, model: PairModel) -> Verdict:
    """What `new` is to `old`. The judge says whether the texts are incompatible or one fact; the rules
    say the rest, as the labels define it: incompatible texts are an update (replacement) when the
    newer one says so or comes from the same agent and source, else a conflict; one fact from another
    agent with another tier is an importance conflict, else a duplicate."""
    from commands.conflicts.pair_features import pair_features

    x = pair_features(new, old, cosine)
    p_incompatible, p_same = model.conflict(x), model.merge(x)
    a, b = old.signals, new.signals
    base = Verdict(NONE, cosine=cosine, overlap=_overlap(a.features, b.features))
    updates = b.cue or (new.agent == old.agent and new.source == old.source)
    if p_incompatible >= model.conflict_threshold and p_incompatible >= p_same:
        if updates:
            return replace(base, relation=REPLACEMENT, kind="cue" if b.cue else "same_source",
                           confidence=round(p_incompatible, 6))
        return replace(base, relation=CONFLICT, kind=_kind_of(new, old), confidence=round(p_incompatible, 6),
                       evidence=_evidence(a, b))
    if p_same >= model.merge_threshold:
        if new.agent != old.agent and new.tier != old.tier:
            return replace(base, relation=CONFLICT, kind="importance", confidence=round(p_same, 6),
                           evidence=f"tier {old.tier} vs {new.tier}")
        return replace(base, relation=DUPLICATE, confidence=round(p_same, 6))
    return base
