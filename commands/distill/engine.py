"""What distilling one episode by rules decides: the hard-rule verdict, then the candidates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from commands.distill.hard_rules import Verdict, hard_rules
from commands.distill.rule_extractor import EXTRACTOR, Candidate, extract
from commands.distill.statements import read_statements


@dataclass(frozen=True, slots=True)
class RuleOutcome:
    verdict: Verdict
    candidates: list[Candidate]
    extractor: str = EXTRACTOR


def distill_by_rules(kind: str, status: str, turns: Sequence[dict[str, Any]]) -> RuleOutcome:
    statements = read_statements(turns, kind)
    candidates = extract(statements)
    verdict = hard_rules(kind, status, turns, statements, bool(candidates))
    return RuleOutcome(verdict, [] if verdict.skip else candidates)


def asks_to_remember(turns: Sequence[dict[str, Any]]) -> bool:
    """A user turn says "remember this" (seed 3.1's urgent path: distilled at once, outside the budget)."""
    return any(s.remember for s in read_statements([t for t in turns if t["role"] == "user"]))
