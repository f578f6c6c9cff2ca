"""Knowledge gaps (seed 3.2.2, flow 3): misses, topics, and the A/B/C/D classification.

- A **miss** is a recall with no result scoring at or above max(its `min_score`, MISS_FLOOR). 0.32 is the
  relevance floor the README documents for the default model (it keeps 96-98% of LoCoMo's right top hits
  and drops most off-topic questions).
- A **topic** is one agent's queries whose embedding has cosine >= 0.8 with the topic's first query.
- **Three misses** on a topic within 24 h (of log time) with no hit on it between open a gap.

Classification, in this order (the seed's 0.85 / 0.75 / 0.3 are cosines of bge-m3; these are the default
model's, whose related texts sit much lower: a question naming a stored fact by an abbreviation ("where
is k8s" for "The Kubernetes cluster lives on ...") has cosine ~0.16, unrelated questions ("the weather
in Paris") 0.05-0.08. The two numbers were set from such probes, not tuned on a labelled set):
- **C** (recall failure): searching the agent's default scope (own namespaces and `shared`, no
  `min_score`) finds a result at or above the floor that the missed recall did not search (its
  `namespace` narrowed the scope) or dropped (its `min_score`). Repair: the recalls again in the default
  scope with top_k doubled (at least 20) and diversity 0.
- **A** (truly unknown): no memory of the scope has cosine >= A_FAR (0.1) with any of the queries
  (the seed compares with cluster centroids; the nearest memory bounds every centroid's cosine).
- **B** (synonym mismatch): the best candidate has cosine >= B_CLOSE (0.15) and shares no term with the
  query. Repair: a synonym from a query term to the candidate term nearest it in meaning
  (`synonym.added`), verified by running the recalls again.
- **D** (fragmented): anything else: something is near but nothing answers. Pushed to the agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from commands.access import Actor, resolve_scope

MISS_FLOOR = 0.32
TOPIC_COSINE = 0.8
MISSES_TO_OPEN = 3
WINDOW_MS = 24 * 3600 * 1000
A_FAR = 0.1
B_CLOSE = 0.15

SUGGESTIONS = {
    "A": "nothing stored is near this topic: commit what the agent needs to know about it",
    "B": "a stored memory names this differently: a synonym is proposed and verified",
    "C": "an answer exists in the agent's default scope but the recall's namespace or min_score left it out: "
         "search the default scope, or lower min_score",
    "D": "related memories exist but none answers: commit the missing fact, or let deep consolidation merge "
         "the fragments",
}


def is_miss(scores: Sequence[float], min_score: float | None) -> bool:
    floor = max(MISS_FLOOR, min_score if min_score is not None else MISS_FLOOR)
    return not any(s >= floor for s in scores)


@dataclass
class Topic:
    """One agent's candidate topic: its first query (and vector) and the misses since its last hit."""

    first: str
    vector: np.ndarray
    misses: list[tuple[int, str, tuple[str, ...], float | None]] = field(default_factory=list)  # (ms, query, ns, min)

    def matches(self, vector: np.ndarray) -> bool:
        return float(self.vector @ vector) >= TOPIC_COSINE

    def note_miss(self, ms: int, query: str, namespaces: tuple[str, ...], min_score: float | None) -> bool:
        """Record a miss; True when the topic now has MISSES_TO_OPEN within the window."""
        self.misses = [m for m in self.misses if ms - m[0] <= WINDOW_MS]
        self.misses.append((ms, query, namespaces, min_score))
        return len(self.misses) >= MISSES_TO_OPEN


@dataclass(frozen=True, slots=True)
class Candidate:
    memory_id: str
    namespace: str
    score: float
    similarity: float
    terms: frozenset[str]


def classify(query_terms: frozenset[str], searched: Sequence[Candidate], default_hits: Sequence[Candidate],
             missed_namespaces: set[str], min_scores: Sequence[float | None]) -> tuple[str, dict[str, Any]]:
    """(gap type, evidence). `searched`: the best candidates of the missed recalls' own scope (no
    min_score); `default_hits`: the default scope's results at or above the floor."""
    strictest = max((m for m in min_scores if m is not None), default=None)
    for hit in default_hits:
        left_out = hit.namespace not in missed_namespaces
        dropped = strictest is not None and hit.score < strictest
        if left_out or dropped:
            return "C", {"memory_id": hit.memory_id, "namespace": hit.namespace, "score": round(hit.score, 6),
                         "reason": "namespace" if left_out else "min_score"}
    best = max(searched, key=lambda c: c.similarity, default=None)
    if best is None or best.similarity < A_FAR:
        return "A", {"best_similarity": round(best.similarity, 6) if best else None}
    evidence = {"memory_id": best.memory_id, "best_similarity": round(best.similarity, 6)}
    if best.similarity >= B_CLOSE and not (best.terms & query_terms):
        return "B", evidence
    return "D", evidence


async def default_scope(store: Any, agent: str) -> list[str]:
    """The namespaces `agent`'s recalls search by default (`commands.access.resolve_scope`): its own and
    `shared` (`shared` alone for an agent the write-side index does not know)."""
    idx = await store.agent_index(agent)
    actor = Actor(idx.agent_id, idx.main_namespace, idx.ephemeral_namespace) if idx is not None else None
    return resolve_scope(actor, None, ())
