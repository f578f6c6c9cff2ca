"""Recall through a configured bge-reranker provider: a local server speaking the /v1/rerank format."""

from __future__ import annotations

import pytest
from aiohttp import web


@pytest.fixture
async def rerank_server(aiohttp_server):
    """Scores documents mentioning 'banana' 0.99, others 0.01; answers best first with document objects."""
    seen: list[tuple[dict, str | None]] = []

    async def rerank(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append((body, request.headers.get("Authorization")))
        results = [{"index": i, "relevance_score": 0.99 if "banana" in d else 0.01, "document": {"text": d}}
                   for i, d in enumerate(body["documents"])]
        results.sort(key=lambda r: -r["relevance_score"])
        return web.json_response({"results": results, "usage": {"total_tokens": 42}})

    app = web.Application()
    app.router.add_post("/v1/rerank", rerank)
    server = await aiohttp_server(app)
    server.seen = seen
    return server


@pytest.fixture
def settings_overrides(rerank_server) -> dict:
    return {"rerank_endpoint": str(rerank_server.make_url("/")), "rerank_api_key": "rk-test",
            "rerank_model": "bge-reranker-v2-m3"}


async def test_the_reranker_decides_the_order(api, rerank_server):
    key = await api.register("alice")
    status, body = await api.call("POST", "/api/v1/batch-commit", key, json={"entries": [
        {"content": "Apples in the orchard are red and crisp"},
        {"content": "The banana on the counter is yellow"},
        {"content": "Apples are harvested in October"}]})
    assert status == 201
    banana = body["results"][1]["memory_id"]
    status, got = await api.recall(key, "what colour are the apples", diversity=0.0, after=body["position"])
    assert status == 200 and got["results"][0]["memory_id"] == banana
    assert got["results"][0]["score"] == pytest.approx(0.99)
    sent, auth = rerank_server.seen[-1]
    assert auth == "Bearer rk-test" and sent["model"] == "bge-reranker-v2-m3"
    assert sent["query"] == "what colour are the apples" and len(sent["documents"]) == 3
