"""QueryVectors: concurrent recalls share embedding calls; failures reach every waiter."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from tests.hash_embedder import HashEmbedder
from projections.models.query_vectors import QueryVectors


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(dim=8)
        self.batches: list[int] = []
        self.fail = False

    def embed(self, texts):
        if self.fail:
            raise RuntimeError("model unavailable")
        self.batches.append(len(texts))
        return super().embed(texts)


async def test_concurrent_queries_are_embedded_in_batches() -> None:
    emb = CountingEmbedder()
    qv = QueryVectors(emb, max_batch=8)
    queries = [f"query {i}" for i in range(20)]
    vecs = await asyncio.gather(*(qv.vector(q) for q in queries), qv.vector("query 3"))
    assert len(emb.batches) < 20 and max(emb.batches) <= 8 and sum(emb.batches) == 20  # the duplicate is shared
    for q, v in zip(queries, vecs):
        assert np.allclose(v, emb.vector(q))
    assert np.array_equal(vecs[-1], vecs[3])
    calls = len(emb.batches)
    await qv.vector("query 5")  # cached
    assert len(emb.batches) == calls


async def test_an_embedding_failure_reaches_every_waiter_and_the_next_call_retries() -> None:
    emb = CountingEmbedder()
    qv = QueryVectors(emb)
    emb.fail = True
    results = await asyncio.gather(qv.vector("a"), qv.vector("b"), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results)
    emb.fail = False
    assert np.allclose(await qv.vector("a"), emb.vector("a"))
    with pytest.raises(RuntimeError):
        emb.fail = True
        await qv.vector("c")
