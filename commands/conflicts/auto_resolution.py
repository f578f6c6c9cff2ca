"""Automatic verdicts (seed 3.3.2): the rules that settle a conflict without asking anyone.

In order, the first that applies wins:

1. ``trust_gap`` — the sources' trust (seed 3.3.3: user_verbal 1.0 ... llm_distill 0.4) differs by
   more than :data:`TRUST_GAP`: the more trusted memory wins (strategy ``trust_wins``);
2. ``age_gap`` — the memories were committed more than :data:`AGE_GAP_DAYS` days apart: the later
   wins (``latest_wins``);
3. ``same_source`` — both come from the same source: the later wins (``latest_wins``);
4. ``importance`` — an importance conflict (the same fact, another tier): the later wins;
5. ``profile`` — people settled at least :data:`PROFILE_MIN` conflicts of this kind between these
   two sources, always for the same one: that source's memory wins (``trust_wins``).

Otherwise the conflict stays open for a person (``ask_user``). Pure: the two memory rows in, a
decision out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from events.vocabulary import source_trust
from projections.memories.scores import ms_of

TRUST_GAP: Final = 0.5
PROFILE_MIN: Final = 3
AGE_GAP_DAYS: Final = 90
DAY_MS: Final = 86_400_000


@dataclass(frozen=True, slots=True)
class AutoVerdict:
    strategy: str
    rule: str
    winner: str
    loser: str


def decide(kind: str, a: dict[str, Any], b: dict[str, Any],
           profile: dict[str, int] | None = None) -> AutoVerdict | None:
    """The automatic verdict on a conflict between rows `a` and `b`, or None (ask a person).
    `profile`: people's earlier verdicts between the two sources, {source: wins}."""
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
    sa, sb = a.get("source", ""), b.get("source", "")
    wins_a, wins_b = (profile or {}).get(sa, 0), (profile or {}).get(sb, 0)
    if wins_a >= PROFILE_MIN and wins_b == 0:
        return AutoVerdict("trust_wins", "profile", a["id"], b["id"])
    if wins_b >= PROFILE_MIN and wins_a == 0:
        return AutoVerdict("trust_wins", "profile", b["id"], a["id"])
    return None
