"""The read use cases the HTTP handlers call, built in one place from the services the wiring opened."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from events.clock import Clock
from events.redis.answer_cache import RecallCache
from events.redis.store import EventStore
from projections.activity.reader import ActivityReader
from projections.memories.reader import MemoriesReader
from projections.queries.recall.service import RecallService
from projections.queries.recall_answers import RecallAnswers
from projections.queries.stats import Stats
from projections.queries.versions import MemoryVersions


@dataclass(frozen=True, slots=True)
class Queries:
    recall: RecallAnswers       # POST/GET /api/v1/recall
    versions: MemoryVersions    # GET /api/v1/memory/{id}/versions
    stats: Stats                # GET /api/v1/stats, GET /health


def build_queries(*, store: EventStore, memories: MemoriesReader, activity: ActivityReader, recall: RecallService,
                  recall_cache: RecallCache, clock: Clock, projectors: list[str], rates: Any = None) -> Queries:
    """Every query object; `projectors` names the projectors this deployment runs."""
    return Queries(recall=RecallAnswers(recall, recall_cache, store),
                   versions=MemoryVersions(memories, activity, clock, rates),
                   stats=Stats(store, memories, projectors))
