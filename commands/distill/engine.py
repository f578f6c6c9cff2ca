"""What distilling one episode without an LLM decides: the hard-rule verdict, then the candidates.

With a `StatementJudge` (`commands.distill.learned`, extractor `learned:v1`) the learned judge
re-decides which user statements are memorable; without one the rules' thresholds do (`rules:v1`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from commands.distill.hard_rules import Verdict, hard_rules
from commands.distill.rule_extractor import EXTRACTOR, Candidate, extract
from commands.distill.statements import read_statements

if TYPE_CHECKING:
    from commands.distill.learned import StatementJudge


@dataclass(frozen=True, slots=True)
class RuleOutcome:
    verdict: Verdict
    candidates: list[Candidate]
    extractor: str = EXTRACTOR


def distill_by_rules(kind: str, status: str, turns: Sequence[dict[str, Any]],
                     judge: StatementJudge | None = None) -> RuleOutcome:
    """Blocking when `judge` is given (it embeds the user's sentences): call it off the event loop."""
    statements = read_statements(turns, kind)
    extractor = EXTRACTOR
    if judge is not None:
        from commands.distill.learned import EXTRACTOR as LEARNED

        statements = judge.rejudge(statements, kind)
        extractor = LEARNED
    candidates = extract(statements)
    verdict = hard_rules(kind, status, turns, statements, bool(candidates))
    return RuleOutcome(verdict, [] if verdict.skip else candidates, extractor)


def asks_to_remember(turns: Sequence[dict[str, Any]]) -> bool:
    """A user turn says "remember this" (seed 3.1's urgent path: distilled at once, outside the budget)."""
    return any(s.remember for s in read_statements([t for t in turns if t["role"] == "user"]))
