"""Recall, first version of seed 2.6: encode the query -> vector search (namespace prefilter)
-> drop hits below `min_score` -> top_k.

Later stages (hybrid lexical search, rerank, MMR, graph expansion, prefetch, cache) plug in
between `_candidates` and `_finish` without changing the request/hit shapes.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from projections.errors import InvalidQuery
from projections.reader import MAX_LIMIT, MemoriesReader, valid_namespaces


@dataclass(frozen=True, slots=True)
class RecallRequest:
    query: str
    namespaces: list[str]
    top_k: int = 10
    min_score: float | None = None

    def validated(self) -> "RecallRequest":
        if not isinstance(self.query, str) or not self.query.strip():
            raise InvalidQuery("query must be a non-empty string")
        if not 0 < self.top_k <= MAX_LIMIT:
            raise InvalidQuery(f"top_k must be in 1..{MAX_LIMIT}, got {self.top_k}")
        if self.min_score is not None and not -1.0 <= self.min_score <= 1.0:
            raise InvalidQuery(f"min_score must be in [-1, 1], got {self.min_score}")
        return RecallRequest(self.query, valid_namespaces(self.namespaces), self.top_k, self.min_score)


@dataclass(frozen=True, slots=True)
class RecallHit:
    memory_id: str
    content: str
    score: float
    namespace: str
    category: str
    tags: list[str] = field(default_factory=list)
    source: str = ""
    version: int = 1
    timestamp: str = ""
    freshness: str = "fresh"

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "RecallHit":
        return cls(memory_id=row["id"], content=row["content"], score=float(row["score"]),
                   namespace=row["namespace"], category=row["category"], tags=list(row.get("tags") or []),
                   source=row.get("source", ""), version=int(row.get("version", 1)),
                   timestamp=row.get("timestamp", ""), freshness=row.get("freshness", "fresh"))


class QueryVectors:
    """Query text -> vector, with a small in-memory LRU.

    Queries bypass the persistent embedding cache (it holds memory contents, which is what makes
    replays fast; one-off query strings would only bloat it and cost a disk write per recall).
    """

    def __init__(self, embedder: Any, capacity: int = 2048) -> None:
        self.embedder = getattr(embedder, "inner", embedder)  # CachedEmbedder -> the model itself
        self.capacity = capacity
        self._lru: OrderedDict[str, np.ndarray] = OrderedDict()

    async def vector(self, query: str) -> np.ndarray:
        hit = self._lru.get(query)
        if hit is not None:
            self._lru.move_to_end(query)
            return hit
        vecs = await asyncio.to_thread(self.embedder.embed, [query])
        vec = np.asarray(vecs, dtype=np.float32)[0]
        self._lru[query] = vec
        if len(self._lru) > self.capacity:
            self._lru.popitem(last=False)
        return vec


class RecallService:
    def __init__(self, reader: MemoriesReader, embedder: Any) -> None:
        self.reader = reader
        self.queries = QueryVectors(embedder)

    async def recall(self, req: RecallRequest) -> list[RecallHit]:
        req = req.validated()
        if not req.namespaces:
            return []
        vector = await self._encode(req.query)
        rows = await self._candidates(vector, req)
        return self._finish(rows, req)

    async def _encode(self, query: str) -> np.ndarray:
        return await self.queries.vector(query)

    async def _candidates(self, vector: np.ndarray, req: RecallRequest) -> list[dict[str, Any]]:
        return await self.reader.asearch(vector, req.namespaces, req.top_k)

    @staticmethod
    def _finish(rows: list[dict[str, Any]], req: RecallRequest) -> list[RecallHit]:
        if req.min_score is not None:
            rows = [r for r in rows if r["score"] >= req.min_score]
        return [RecallHit.from_row(r) for r in rows[: req.top_k]]
