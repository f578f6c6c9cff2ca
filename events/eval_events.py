"""The evaluation events (seed 6.1: golden sets and the runs scored against them; registered in
`events.catalogue`, which re-exports them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from events.catalogue import event_type


@event_type("eval.golden_set_created")
@dataclass(frozen=True, slots=True)
class GoldenSetCreated:
    golden_set_id: str
    queries: tuple[dict[str, Any], ...]    # {query, expected_ids, tag, difficulty, agent_id}
    generator: str = "rules"
    seed: int = 0
    namespace: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "queries", tuple(self.queries))


@event_type("eval.completed")
@dataclass(frozen=True, slots=True)
class EvalCompleted:
    metrics: dict[str, Any]        # recall_at_5, precision_at_5, mean_reciprocal_rank, by tag, by agent
    queries: int
    top_k: int = 5
    golden_set_id: str = ""
    namespace: str = ""
    details: tuple[dict[str, Any], ...] = ()  # per-query details, only when small

    def __post_init__(self) -> None:
        object.__setattr__(self, "details", tuple(self.details))
