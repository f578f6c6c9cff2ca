"""Query text -> vector for recall: an in-memory LRU in front of the embedder, with micro-batching."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

import numpy as np

__all__ = ["QueryVectors"]


class QueryVectors:
    """Query text -> vector, with a small in-memory LRU and micro-batching.

    Queries bypass the persistent embedding cache (it holds memory contents, which is what makes
    replays fast; one-off query strings would only bloat it and cost a disk write per recall).
    Concurrent recalls share embedding calls: queries that arrive while one call runs are embedded
    together in the next (USE costs ~3 ms for one query, ~0.9 ms each in a batch of 16), and one
    worker thread at a time keeps the model from competing with the event loop for the GIL.
    """

    def __init__(self, embedder: Any, capacity: int = 2048, max_batch: int = 32) -> None:
        self.embedder = getattr(embedder, "inner", embedder)  # CachedEmbedder -> the model itself
        self.capacity = capacity
        self.max_batch = max_batch
        self._lru: OrderedDict[str, np.ndarray] = OrderedDict()
        self._pending: dict[str, asyncio.Future] = {}
        self._worker: asyncio.Task | None = None

    @property
    def model_id(self) -> str:
        return str(getattr(self.embedder, "model_id", "unknown"))

    def cached(self, query: str) -> np.ndarray | None:
        """The query's vector when it is held (a recall embedded it lately), else None; embeds nothing."""
        return self._lru.get(query)

    async def vector(self, query: str) -> np.ndarray:
        hit = self._lru.get(query)
        if hit is not None:
            self._lru.move_to_end(query)
            return hit
        fut = self._pending.get(query)
        if fut is None:
            fut = self._pending[query] = asyncio.get_running_loop().create_future()
            if self._worker is None or self._worker.done():
                self._worker = asyncio.create_task(self._drain(), name="query_vectors:embed")
        return await asyncio.shield(fut)  # a cancelled recall must not cancel its batch-mates

    async def _drain(self) -> None:
        while self._pending:
            batch = dict(list(self._pending.items())[: self.max_batch])
            for q in batch:
                del self._pending[q]
            try:
                vecs = np.asarray(await asyncio.to_thread(self.embedder.embed, list(batch)), dtype=np.float32)
            except BaseException as exc:  # noqa: BLE001 - every waiter of this batch gets the error
                for fut in batch.values():
                    if not fut.done():
                        fut.set_exception(exc if isinstance(exc, Exception) else RuntimeError("embedding cancelled"))
                if not isinstance(exc, Exception):
                    raise
                continue
            for (q, fut), vec in zip(batch.items(), vecs):
                self._lru[q] = vec
                if not fut.done():
                    fut.set_result(vec)
            while len(self._lru) > self.capacity:
                self._lru.popitem(last=False)
