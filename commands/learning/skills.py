"""Skill crystallisation and trials (seed 6.5).

Eligibility: an L2 pattern (`category: pattern`) with >= 3 useful feedbacks (agents, one vote each),
no open conflict, not deprecated, not already a skill. Its useful and not-useful votes are its first
trials ("3 useful feedbacks = 3 independent successful trials"), so the Beta-Bernoulli posterior
starts at alpha = 1 + useful, beta = 1 + not useful (prior Beta(1, 1)); every trial then adds one to
alpha (success) or beta (failure). eta = alpha / (alpha + beta): active at >= 0.8, probation in
[0.5, 0.8), retired below 0.5 (an ordinary pattern again, still tracked: trials may bring it back).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

PRIOR_ALPHA = PRIOR_BETA = 1.0
MIN_USEFUL = 3
ACTIVE_AT = 0.8
PROBATION_AT = 0.5
STATUSES = ("active", "probation", "retired")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,79}$")


@dataclass(frozen=True, slots=True)
class Posterior:
    successes: int
    failures: int

    @property
    def alpha(self) -> float:
        return PRIOR_ALPHA + self.successes

    @property
    def beta(self) -> float:
        return PRIOR_BETA + self.failures

    @property
    def eta(self) -> float:
        return self.alpha / (self.alpha + self.beta)

    @property
    def status(self) -> str:
        return status_of(self.eta)

    def after(self, success: bool) -> "Posterior":
        return Posterior(self.successes + 1, self.failures) if success else Posterior(self.successes, self.failures + 1)


def status_of(eta: float) -> str:
    if eta >= ACTIVE_AT:
        return "active"
    return "probation" if eta >= PROBATION_AT else "retired"


def eligible(category: str, status: str, useful: int, open_conflicts: int, already: bool) -> bool:
    return (category == "pattern" and status not in ("deprecated", "merged") and useful >= MIN_USEFUL
            and open_conflicts == 0 and not already)


def skill_name(content: str, memory_id: str) -> str:
    """A URL-safe name: up to five ASCII words of the content and the memory id's first 8 characters
    (`skill-<id>` for content without ASCII words, e.g. Chinese)."""
    ascii_text = unicodedata.normalize("NFKD", content).encode("ascii", "ignore").decode().lower()
    words = [w for w in re.findall(r"[a-z0-9]+", ascii_text) if w not in ("recurring", "the", "a", "an")][:5]
    suffix = re.sub(r"[^a-z0-9]", "", memory_id.lower())[:8] or "0"
    return "-".join([*(words or ["skill"]), suffix])[:80]
