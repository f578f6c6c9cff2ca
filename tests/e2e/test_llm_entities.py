"""The LLM client and the LLM entity extractor against a local server speaking the OpenAI
/v1/chat/completions format: the model's entities are recorded as an event and join the graph."""

from __future__ import annotations

import orjson
import pytest
from aiohttp import web

from tests.e2e.chat_stub import chat_reply, serve_chat

from commands.llm import BudgetExhausted, ChatClient, LLMError
from commands.reactions.llm_entities import parse_entities
from events.clock import ManualClock
from events.redis.counters import Counters


@pytest.fixture
async def chat_server(aiohttp_server):
    """Names 牧尘 (person) and ComfyUI (product) when they appear; `fail` answers queue errors first."""
    state = {"seen": [], "fail": []}

    async def complete(request: web.Request) -> web.Response:
        body = await request.json()
        state["seen"].append((body, request.headers.get("Authorization")))
        if state["fail"]:
            status, text = state["fail"].pop(0)
            return web.Response(status=status, text=text, content_type="application/json")
        note = body["messages"][-1]["content"]
        entities = [{"kind": "person", "name": "牧尘"}] if "牧尘" in note else []
        if "ComfyUI" in note:
            entities.append({"kind": "product", "name": "ComfyUI"})
        entities.append({"kind": "spaceship", "name": "  "})             # dropped: blank name
        return chat_reply(orjson.dumps({"entities": entities}).decode())

    return await serve_chat(aiohttp_server, complete, state)


@pytest.fixture
def settings_overrides(chat_server) -> dict:
    return {"llm_endpoint": str(chat_server.make_url("/")), "llm_api_key": "sk-test", "llm_model": "qwen2.5-7b"}


async def test_the_client_speaks_the_wire_format_retries_and_keeps_a_budget(chat_server, redis):
    client = ChatClient(str(chat_server.make_url("/v1")), "m1", "sk-x", counters=Counters(redis), daily_limit=3,
                        clock=ManualClock(1_800_000_000_000))
    client.backoff_s = (0.0,)
    try:
        answer = await client.complete("system says", "牧尘 uses ComfyUI")
        body, auth = chat_server.state["seen"][-1]
        assert auth == "Bearer sk-x" and body["model"] == "m1" and body["temperature"] == 0
        assert body["response_format"] == {"type": "json_object"}
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert parse_entities(answer) == (("person", "牧尘"), ("product", "ComfyUI"))
        chat_server.state["fail"] = [(503, '{"error": {"message": "busy"}}')]
        await client.complete("s", "again")                                    # retried after a 503
        chat_server.state["fail"] = [(400, '{"error": {"message": "bad model"}}')]
        with pytest.raises(LLMError, match="bad model"):
            await client.complete("s", "refused")
        calls = len(chat_server.state["seen"])
        with pytest.raises(BudgetExhausted):                                  # 3 calls today: spent
            await client.complete("s", "over budget")
        assert len(chat_server.state["seen"]) == calls                         # never sent
        client.clock.advance(days=1)
        await client.complete("s", "a new day")
    finally:
        await client.close()


def test_parse_entities_is_strict_about_shape_and_lenient_about_kinds():
    assert parse_entities('{"entities": [{"kind": "Person", "name": " 牧尘 "}, {"kind": "x", "name": "Redis"},'
                          ' {"kind": "person", "name": "牧尘"}, 5]}') == (("person", "牧尘"), ("concept", "Redis"))
    for bad in ("not json", "[]", '{"entities": "x"}', "{}"):
        with pytest.raises(ValueError):
            parse_entities(bad)


async def test_llm_entities_join_the_graph(api, chat_server):
    key = await api.register("alice")
    status, body = await api.commit(key, "牧尘 wants ComfyUI restarted every night")
    assert status == 201
    await api.settle()
    _, auth = chat_server.state["seen"][-1]
    assert auth == "Bearer sk-test"
    assert await api.count_events("entities.extracted") == 1
    status, got = await api.call("POST", "/api/v1/graph/query", key, json={
        "query": "MATCH (m)-[:REFERENCES]->(e:entity) WHERE e.properties.kind = 'person' RETURN m.id, e.label"})
    assert status == 200, got
    assert got["rows"] == [[body["memory_id"], "牧尘"]]
