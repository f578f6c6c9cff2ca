"""The evaluation framework's metrics (seed 6.1): run golden queries through the recall service.

Every query goes through the SAME `RecallService.recall` the `/api/v1/recall` endpoint uses (so
an evaluation measures exactly what agents get) but nothing is audited: evaluation runs are not
agent recalls and append no `recall.served`.

Metrics, per query, over the ranked result ids:
- `recall_at_5` = |expected ∩ top 5| / |expected|
- `precision_at_5` = |expected ∩ top 5| / |top 5| (the results actually returned, at most 5; 0 when none)
- reciprocal rank = 1 / rank of the first expected id within the top `top_k` (0 when absent)
- `hits` / `misses`: the expected ids found / not found within the top `top_k`.
Overall values are means over queries; `recall_at_5_by_tag` and `recall_by_agent` are means of
`recall_at_5` over the queries with that tag / agent (queries without one are left out).
`recall_at_k` / `precision_at_k` are the same with k = `top_k`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from projections.queries.recall.service import RecallRequest

K = 5
DEFAULT_TOP_K = 5
MAX_QUERIES = 1000


class Recaller(Protocol):
    async def recall(self, req: RecallRequest) -> list[Any]:
        ...


@dataclass(frozen=True, slots=True)
class EvalQuery:
    query: str
    expected_ids: tuple[str, ...]
    tag: str = ""
    agent_id: str = ""
    difficulty: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"query": self.query, "expected_ids": list(self.expected_ids)}
        for name in ("tag", "agent_id", "difficulty"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> "EvalQuery":
        return cls(str(raw["query"]), tuple(raw.get("expected_ids") or ()), str(raw.get("tag") or ""),
                   str(raw.get("agent_id") or ""), str(raw.get("difficulty") or ""))


@dataclass(frozen=True, slots=True)
class QueryScore:
    query: EvalQuery
    returned: tuple[str, ...]
    hits: tuple[str, ...]
    misses: tuple[str, ...]
    recall_at_5: float
    precision_at_5: float
    recall_at_k: float
    precision_at_k: float
    reciprocal_rank: float

    def to_json(self) -> dict[str, Any]:
        out = {"query": self.query.query, "expected_ids": list(self.query.expected_ids), "hits": list(self.hits),
               "misses": list(self.misses), "recall_at_5": round(self.recall_at_5, 6),
               "precision_at_5": round(self.precision_at_5, 6), "reciprocal_rank": round(self.reciprocal_rank, 6),
               "returned": list(self.returned)}
        for name in ("tag", "agent_id", "difficulty"):
            if getattr(self.query, name):
                out[name] = getattr(self.query, name)
        return out


def _precision(found: int, returned: int) -> float:
    return found / returned if returned else 0.0


def score_query(query: EvalQuery, returned: Sequence[str], top_k: int) -> QueryScore:
    expected = list(dict.fromkeys(query.expected_ids))
    top = list(returned[:top_k])
    top5 = list(returned[:K])
    want = set(expected)
    in5 = sum(1 for r in top5 if r in want)
    ink = sum(1 for r in top if r in want)
    rank = next((i for i, r in enumerate(top, 1) if r in want), 0)
    n = len(expected) or 1
    return QueryScore(
        query=query, returned=tuple(top),
        hits=tuple(e for e in expected if e in top), misses=tuple(e for e in expected if e not in top),
        recall_at_5=in5 / n, precision_at_5=_precision(in5, len(top5)),
        recall_at_k=ink / n, precision_at_k=_precision(ink, len(top)),
        reciprocal_rank=1.0 / rank if rank else 0.0)


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 6) if values else 0.0


def _by(scores: Sequence[QueryScore], attr: str) -> dict[str, float]:
    groups: dict[str, list[float]] = {}
    for s in scores:
        key = getattr(s.query, attr)
        if key:
            groups.setdefault(key, []).append(s.recall_at_5)
    return {k: _mean(v) for k, v in sorted(groups.items())}


def summarize(scores: Sequence[QueryScore], top_k: int) -> dict[str, Any]:
    return {
        "recall_at_5": _mean([s.recall_at_5 for s in scores]),
        "precision_at_5": _mean([s.precision_at_5 for s in scores]),
        "mean_reciprocal_rank": _mean([s.reciprocal_rank for s in scores]),
        "recall_at_k": _mean([s.recall_at_k for s in scores]),
        "precision_at_k": _mean([s.precision_at_k for s in scores]),
        "k": top_k,
        "recall_at_5_by_tag": _by(scores, "tag"),
        "recall_by_agent": _by(scores, "agent_id"),
    }


@dataclass(frozen=True, slots=True)
class EvalReport:
    metrics: dict[str, Any]
    scores: list[QueryScore] = field(default_factory=list)
    top_k: int = DEFAULT_TOP_K

    def details(self) -> list[dict[str, Any]]:
        return [s.to_json() for s in self.scores]


async def evaluate(recaller: Recaller, queries: Sequence[EvalQuery], scopes: dict[str, list[str]],
                   top_k: int = DEFAULT_TOP_K) -> EvalReport:
    """Run each query with the namespaces of its agent (`scopes[query.agent_id]`, "" = no agent)."""
    limit = max(top_k, K)
    scores: list[QueryScore] = []
    for q in queries:
        hits = await recaller.recall(RecallRequest(query=q.query, namespaces=list(scopes.get(q.agent_id, [])),
                                                   top_k=limit))
        scores.append(score_query(q, [h.memory_id for h in hits], top_k))
    return EvalReport(summarize(scores, top_k), scores, top_k)
