"""HttpEmbedder against a local aiohttp server speaking the OpenAI /v1/embeddings wire format."""

from __future__ import annotations

import asyncio
import hashlib
import random
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from projections.models.cached_embedder import CachedEmbedder
from projections.models.embedding import EmbeddingError, make_embedder
from projections.models.embedding_cache import EmbeddingCache
from projections.models.http_embedder import HttpEmbedder

TOKEN = "sk-test-token"
DIM = 6


def raw_vector(text: str, dim: int = DIM) -> list[float]:
    """Deterministic, deliberately NOT normalised vector for ``text``."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [float(b) + 1.0 for b in digest[:dim]]


def unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)


@dataclass
class FakeProvider:
    """Behaviour of the local embeddings server; tests tweak it between calls."""

    dim: int = DIM
    fail_next: list[int] = field(default_factory=list)  # HTTP statuses to return before succeeding
    malformed: bool = False
    requests: int = 0
    batches: list[list[str]] = field(default_factory=list)
    models: list[str] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        self.requests += 1
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response(
                {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                           "code": "invalid_api_key"}},
                status=401,
            )
        if self.fail_next:
            status = self.fail_next.pop(0)
            return web.json_response({"error": {"message": "upstream overloaded", "type": "server_error"}},
                                     status=status)
        body: dict[str, Any] = await request.json()
        texts = body["input"]
        if isinstance(texts, str):
            texts = [texts]
        self.batches.append(list(texts))
        self.models.append(body["model"])
        if self.malformed:
            return web.json_response({"object": "list", "results": [[0.1] * self.dim]})
        data = [
            {"object": "embedding", "index": i, "embedding": raw_vector(t, self.dim)}
            for i, t in enumerate(texts)
        ]
        random.Random(len(texts)).shuffle(data)
        if len(data) > 1 and data[0]["index"] == 0:
            data.reverse()  # guarantee the wire order differs from the input order
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
            }
        )


Server = tuple[FakeProvider, str]


@pytest.fixture
async def provider(aiohttp_server: Callable[..., Awaitable[TestServer]]) -> Server:
    fake = FakeProvider()
    app = web.Application()
    app.router.add_post("/v1/embeddings", fake.handle)
    server = await aiohttp_server(app, host="127.0.0.1")
    return fake, str(server.make_url("")).rstrip("/")


async def test_vectors_order_and_normalisation(provider: Server) -> None:
    fake, base = provider
    emb = HttpEmbedder(base, model="bge-m3", api_key=TOKEN)
    texts = ["first", "第二个句子", "third one", "fourth"]
    vecs = await asyncio.to_thread(emb.embed, texts)

    assert vecs.shape == (4, DIM) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
    for row, text in zip(vecs, texts):
        np.testing.assert_allclose(row, unit(raw_vector(text)), atol=1e-6)
    assert emb.dim == DIM and emb.model_id == "http:bge-m3"
    assert fake.models == ["bge-m3"] and fake.batches == [texts]


async def test_full_url_endpoint_and_batching(provider: Server) -> None:
    fake, base = provider
    emb = HttpEmbedder(base + "/v1/embeddings", api_key=TOKEN, batch_size=2)
    texts = [f"text {i}" for i in range(5)]
    vecs = await asyncio.to_thread(emb.embed, texts)

    assert fake.requests == 3
    assert fake.batches == [texts[0:2], texts[2:4], texts[4:5]]
    np.testing.assert_allclose(vecs, np.stack([unit(raw_vector(t)) for t in texts]), atol=1e-6)


async def test_wrong_token_is_401_error_without_retry(provider: Server) -> None:
    fake, base = provider
    emb = HttpEmbedder(base, api_key="wrong")
    with pytest.raises(EmbeddingError, match="401.*Incorrect API key"):
        await asyncio.to_thread(emb.embed, ["x"])
    assert fake.requests == 1

    no_key = HttpEmbedder(base)
    with pytest.raises(EmbeddingError, match="401"):
        await asyncio.to_thread(no_key.embed, ["x"])


async def test_malformed_response(provider: Server) -> None:
    fake, base = provider
    fake.malformed = True
    emb = HttpEmbedder(base, api_key=TOKEN)
    with pytest.raises(EmbeddingError, match="malformed"):
        await asyncio.to_thread(emb.embed, ["x"])


async def test_dim_mismatch_against_configured_dim(provider: Server) -> None:
    _, base = provider
    emb = HttpEmbedder(base, api_key=TOKEN, dim=1024)
    with pytest.raises(EmbeddingError, match="dim"):
        await asyncio.to_thread(emb.embed, ["x"])


async def test_dim_change_between_responses(provider: Server) -> None:
    fake, base = provider
    emb = HttpEmbedder(base, api_key=TOKEN)
    await asyncio.to_thread(emb.embed, ["a"])
    assert emb.dim == DIM
    fake.dim = DIM + 2
    with pytest.raises(EmbeddingError, match=f"dim {DIM + 2}, expected {DIM}"):
        await asyncio.to_thread(emb.embed, ["b"])


async def test_dim_probe_when_unknown(provider: Server) -> None:
    fake, base = provider
    emb = HttpEmbedder(base, api_key=TOKEN)
    assert await asyncio.to_thread(lambda: emb.dim) == DIM
    assert fake.requests == 1


async def test_500_then_success_is_retried(provider: Server) -> None:
    fake, base = provider
    fake.fail_next = [500, 503]
    emb = HttpEmbedder(base, api_key=TOKEN)
    vecs = await asyncio.to_thread(emb.embed, ["retry me"])
    assert fake.requests == 3
    np.testing.assert_allclose(vecs[0], unit(raw_vector("retry me")), atol=1e-6)


async def test_persistent_5xx_gives_up(provider: Server) -> None:
    fake, base = provider
    fake.fail_next = [500, 500, 500, 500]
    emb = HttpEmbedder(base, api_key=TOKEN)
    with pytest.raises(EmbeddingError, match="after 3 attempts.*upstream overloaded"):
        await asyncio.to_thread(emb.embed, ["x"])
    assert fake.requests == 3


async def test_connection_refused_is_embedding_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    emb = HttpEmbedder(f"http://127.0.0.1:{port}", timeout_s=2.0)
    emb.backoff_s = (0.01,)
    with pytest.raises(EmbeddingError, match="3 attempts"):
        await asyncio.to_thread(emb.embed, ["x"])


async def test_cached_http_embedder_skips_server(provider: Server, tmp_path: Any) -> None:
    fake, base = provider
    emb = make_embedder(bge_endpoint=base, bge_api_key=TOKEN, bge_model="bge-m3",
                        cache_path=str(tmp_path / "cache.sqlite"))
    assert isinstance(emb, CachedEmbedder)
    first = await asyncio.to_thread(emb.embed, ["a", "b", "a"])
    assert fake.batches == [["a", "b"]]
    second = await asyncio.to_thread(emb.embed, ["b", "a"])
    assert fake.requests == 1
    np.testing.assert_array_equal(second, first[[1, 0]])
    emb.close()

    reopened = CachedEmbedder(HttpEmbedder(base, api_key=TOKEN), EmbeddingCache(tmp_path / "cache.sqlite"))
    await asyncio.to_thread(reopened.embed, ["a"])
    assert fake.requests == 1 and reopened.hits == 1
    reopened.close()
