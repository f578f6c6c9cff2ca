"""HttpReranker against a local aiohttp server speaking the bge-reranker-v2-m3 /v1/rerank wire format."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from projections.models.http_reranker import HttpReranker
from projections.models.rerank import Reranker, RerankError, make_reranker
from projections.models.rerank_local import LocalReranker

TOKEN = "sk-rerank-token"


def fake_score(query: str, doc: str) -> float:
    """Deterministic relevance in (0, 1): shared characters, like a (very) poor cross-encoder."""
    shared = len(set(query.lower()) & set(doc.lower()))
    return round(shared / (shared + 3.0), 6)


@dataclass
class FakeReranker:
    """Behaviour of the local rerank server; tests tweak it between calls."""

    fail_next: list[int] = field(default_factory=list)  # HTTP statuses to return before succeeding
    body: bytes | None = None  # a raw body to return instead of a computed one
    document_style: str = "object"  # "object" | "string" | "absent"
    drop: set[int] = field(default_factory=set)  # indices left out of the results
    requests: int = 0
    bodies: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        self.requests += 1
        self.headers.append(dict(request.headers))
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response(
                {"error": {"message": "Invalid token", "type": "authentication_error"}}, status=401)
        if self.fail_next:
            error = {"message": "upstream overloaded", "type": "server_error"}
            return web.json_response({"error": error}, status=self.fail_next.pop(0))
        body: dict[str, Any] = await request.json()
        self.bodies.append(body)
        if self.body is not None:
            return web.Response(body=self.body, content_type="application/json")
        results = []
        for i, doc in enumerate(body["documents"]):
            if i in self.drop:
                continue
            item: dict[str, Any] = {"index": i, "relevance_score": fake_score(body["query"], doc)}
            if self.document_style == "object":
                item["document"] = {"text": doc}
            elif self.document_style == "string":
                item["document"] = doc
            results.append(item)
        # Like the real API: sorted by relevance, best first, then cut to top_n.
        results.sort(key=lambda r: -r["relevance_score"])
        results = results[: body.get("top_n", len(results))]
        return web.json_response({"id": "rerank-1", "results": results,
                                  "usage": {"total_tokens": sum(len(d) for d in body["documents"])}})


Server = tuple[FakeReranker, str]


@pytest.fixture
async def server(aiohttp_server: Callable[..., Awaitable[TestServer]]) -> Server:
    fake = FakeReranker()
    app = web.Application()
    app.router.add_post("/v1/rerank", fake.handle)
    srv = await aiohttp_server(app, host="127.0.0.1")
    return fake, str(srv.make_url("")).rstrip("/")


@pytest.fixture
async def client(server: Server) -> AsyncIterator[HttpReranker]:
    _, base = server
    reranker = HttpReranker(base, api_key=TOKEN)
    reranker.backoff_s = (0.01,)
    yield reranker
    await reranker.close()


DOCS = ["nginx reverse proxy config", "apple pie recipe", "网关部署在 nginx 后面", "zzz"]
QUERY = "how is nginx deployed"


async def test_request_shape_and_scores_in_input_order(server: Server, client: HttpReranker) -> None:
    fake, _ = server
    scores = await client.rerank(QUERY, DOCS)

    assert scores == [fake_score(QUERY, d) for d in DOCS]
    assert fake.bodies == [{"model": "bge-reranker-v2-m3", "query": QUERY, "documents": DOCS,
                            "top_n": 4, "return_documents": False}]
    headers = fake.headers[0]
    assert headers["Authorization"] == f"Bearer {TOKEN}"
    assert headers["Content-Type"] == "application/json"
    assert client.model_id == "http:bge-reranker-v2-m3" and client.requests == 1
    assert isinstance(client, Reranker)


async def test_results_really_arrive_out_of_order(server: Server, client: HttpReranker) -> None:
    fake, _ = server
    fake.body = (b'{"results": [{"index": 2, "document": {"text": "c"}, "relevance_score": 0.997},'
                 b' {"index": 0, "document": {"text": "a"}, "relevance_score": 0.891},'
                 b' {"index": 1, "document": {"text": "b"}, "relevance_score": 0.012}],'
                 b' "usage": {"total_tokens": 150}}')
    assert await client.rerank("q", ["a", "b", "c"]) == [0.891, 0.012, 0.997]


@pytest.mark.parametrize("style", ["string", "absent"])
async def test_document_as_string_or_absent(server: Server, client: HttpReranker, style: str) -> None:
    fake, _ = server
    fake.document_style = style
    assert await client.rerank(QUERY, DOCS) == [fake_score(QUERY, d) for d in DOCS]


async def test_missing_documents_get_the_lowest_score(server: Server, client: HttpReranker) -> None:
    fake, _ = server
    fake.drop = {1, 3}
    scores = await client.rerank(QUERY, DOCS)
    returned = [fake_score(QUERY, DOCS[0]), fake_score(QUERY, DOCS[2])]
    assert scores[0] == returned[0] and scores[2] == returned[1]
    assert scores[1] == scores[3] < min(returned)


async def test_empty_documents_make_no_request(server: Server, client: HttpReranker) -> None:
    fake, _ = server
    assert await client.rerank(QUERY, []) == []
    assert fake.requests == 0


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/rerank", "/v1/rerank/"])
async def test_endpoint_with_or_without_suffix(server: Server, suffix: str) -> None:
    fake, base = server
    reranker = HttpReranker(base + suffix, model="my-reranker", api_key=TOKEN)
    try:
        assert await reranker.rerank("q", ["a", "b"]) == [fake_score("q", "a"), fake_score("q", "b")]
    finally:
        await reranker.close()
    assert reranker.url == base + "/v1/rerank"
    assert fake.bodies[-1]["model"] == "my-reranker"


async def test_500_then_200_is_retried(server: Server, client: HttpReranker) -> None:
    fake, _ = server
    fake.fail_next = [500, 503]
    assert await client.rerank(QUERY, DOCS) == [fake_score(QUERY, d) for d in DOCS]
    assert fake.requests == 3


async def test_persistent_5xx_gives_up(server: Server, client: HttpReranker) -> None:
    fake, _ = server
    fake.fail_next = [502] * 5
    with pytest.raises(RerankError, match="after 3 attempts.*HTTP 502.*upstream overloaded"):
        await client.rerank(QUERY, DOCS)
    assert fake.requests == 3


async def test_401_is_rerank_error_without_retry(server: Server) -> None:
    fake, base = server
    for key in ("wrong", None):
        reranker = HttpReranker(base, api_key=key)
        try:
            with pytest.raises(RerankError, match="HTTP 401.*Invalid token"):
                await reranker.rerank(QUERY, DOCS)
        finally:
            await reranker.close()
    assert fake.requests == 2
    assert "Authorization" not in fake.headers[1]


@pytest.mark.parametrize("body", [
    b"<html>502 Bad Gateway</html>",
    b'{"data": [{"index": 0, "relevance_score": 0.5}]}',
    b'{"results": {"index": 0}}',
    b'{"results": [{"index": 7, "relevance_score": 0.5}]}',
    b'{"results": [{"index": 0, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.4}]}',
    b'{"results": [{"index": "0", "relevance_score": 0.5}]}',
    b'{"results": [{"index": 0, "relevance_score": "high"}]}',
    b'{"results": [{"index": 0}]}',
    b'{"results": ["nginx"]}',
])
async def test_malformed_response_is_rerank_error(
    server: Server, client: HttpReranker, body: bytes
) -> None:
    fake, _ = server
    fake.body = body
    with pytest.raises(RerankError, match="malformed"):
        await client.rerank(QUERY, DOCS)
    assert fake.requests == 1


async def test_connection_refused_is_rerank_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    reranker = HttpReranker(f"http://127.0.0.1:{port}", timeout_s=2.0, retries=1)
    reranker.backoff_s = (0.01,)
    try:
        with pytest.raises(RerankError, match="after 2 attempts"):
            await reranker.rerank(QUERY, DOCS)
    finally:
        await reranker.close()


async def test_make_reranker_selects_provider(server: Server) -> None:
    _, base = server
    http = make_reranker(base, TOKEN, None)
    assert isinstance(http, HttpReranker) and http.model == "bge-reranker-v2-m3"
    assert await http.rerank(QUERY, DOCS) == [fake_score(QUERY, d) for d in DOCS]
    await http.close()
    assert isinstance(make_reranker(None, None, None), LocalReranker)
    assert isinstance(make_reranker("", "key", "ignored"), LocalReranker)
