"""Recall as the API answers it (POST/GET /api/v1/recall): the recall service behind the answer
cache (`events.redis.answer_cache`), with the CO_OCCURS partners of the top results and the log
position the answer reflects.

The cache key is a digest of everything the answer depends on, including the read generations
(memories and synonyms) of every namespace it may read: any write that could change the answer
changes the key. Cached answers are kept as the caller rendered them (the caller passes its
renderer), so a hit is served without rendering again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

import orjson

from events.redis.answer_cache import RecallCache
from events.redis.store import EventStore
from events.vocabulary import SHARED_NAMESPACE
from projections.queries.recall.service import RecallHit, RecallRequest, RecallService

PREFETCH_FROM = 3   # the CO_OCCURS partners of the top 3 results


@dataclass(frozen=True, slots=True)
class RecallAnswer:
    results: list[dict[str, Any]]     # rendered hits
    prefetch: list[dict[str, Any]]
    position: str | None              # the memories projection's position the answer reflects
    cached: bool


class RecallAnswers:
    reads: ClassVar[tuple[str, ...]] = ("memories", "synonyms")

    def __init__(self, service: RecallService, cache: RecallCache, store: EventStore) -> None:
        self.service = service
        self.cache = cache
        self.store = store

    async def answer(self, req: RecallRequest, render: Callable[[RecallHit], dict[str, Any]], *,
                     use_cache: bool = True) -> RecallAnswer:
        """The hits of `req` (rendered by `render`) and their prefetch partners: from the cache when
        `use_cache` and an equal request was answered since the last write that could change it."""
        key = await self.cache_key(req) if use_cache and self.cache.enabled else None
        cached = await self.cache.get(key) if key else None
        if cached is not None:
            answer = orjson.loads(cached)
            results, prefetch = answer["results"], answer["prefetch"]
        else:
            hits = await self.service.recall(req)
            results = [render(h) for h in hits]
            prefetch = await self.service.prefetch([h.memory_id for h in hits[:PREFETCH_FROM]], req.namespaces)
            if key:  # cached with its prefetch (CO_OCCURS weights move slowly; the TTL bounds it)
                await self.cache.put(key, orjson.dumps({"results": results, "prefetch": prefetch}))
        return RecallAnswer(results, prefetch, await self.position(), cached is not None)

    async def position(self) -> str | None:
        """The serving index's position when it serves (saving a Redis round trip), else the
        memories checkpoint."""
        index = getattr(self.service, "index", None)
        if index is not None and index.ready and index.position:
            return index.position
        return await self.store.checkpoint("memories")

    async def cache_key(self, req: RecallRequest) -> str:
        namespaces = sorted({*req.namespaces, *([SHARED_NAMESPACE] if req.shared_fallback else [])})
        gens = await self.store.generations([(projector, ns) for projector in ("memories", "synonyms")
                                             for ns in namespaces])
        doc = [self.service.fingerprint, req.query, namespaces, req.top_k, req.min_score, req.diversity,
               req.shared_fallback, req.context, req.importance_weight, gens]
        return hashlib.sha256(orjson.dumps(doc)).hexdigest()
