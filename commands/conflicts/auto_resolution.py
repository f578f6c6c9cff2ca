"""Automatic verdicts (seed 3.3.2): the rules that settle a conflict without asking anyone.

In order, the first that applies wins:

1. ``trust_gap`` — the sources' trust (seed 3.3.3: user_verbal 1.0 ... llm_distill 0.4) differs by
   more than :data:`TRUST_GAP`: the more trusted memory wins (strategy ``trust_wins``);
2. ``age_gap`` — the memories were committed more than :data:`AGE_GAP_DAYS` days apart: the later
   wins (``latest_wins``);
3. ``same_source`` — both come from the same source: the later wins (``latest_wins``);
4. ``importance`` — an importance conflict (the same fact, another tier): the later wins.

Otherwise the conflict stays open for a person (``ask_user``). Pure: the two memory rows in, a
decision out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from events.vocabulary import source_trust
from projections.memories.scores import ms_of

TRUST_GAP: Final = 0.5
AGE_GAP_DAYS: Final = 90
DAY_MS: Final = 86_400_000


@dataclass(frozen=True, slots=True)
class AutoVerdict:
    strategy: str
    rule: str
    winner: str
    loser: str


def decide(kind: str, a: dict[str, Any], b: dict[str, Any]) -> AutoVerdict | None:
    """The automatic verdict on a conflict between rows `a` and `b`, or None (ask a person)."""
    ta, tb = source_trust(a.get("source", "")), source_trust(b.get("source", ""))
    if abs(ta - tb) > TRUST_GAP:
        win, lose = (a, b) if ta > tb else (b, a)
        return AutoVerdict("trust_wins", "trust_gap", win["id"], lose["id"])
    ka, kb = (ms_of(a.get("timestamp", "")), a["id"]), (ms_of(b.get("timestamp", "")), b["id"])
    late, early = (a, b) if ka > kb else (b, a)
    if abs(ka[0] - kb[0]) > AGE_GAP_DAYS * DAY_MS:
        return AutoVerdict("latest_wins", "age_gap", late["id"], early["id"])
    if a.get("source") and a.get("source") == b.get("source"):
        return AutoVerdict("latest_wins", "same_source", late["id"], early["id"])
    if kind == "importance":
        return AutoVerdict("latest_wins", "importance", late["id"], early["id"])
    return None
