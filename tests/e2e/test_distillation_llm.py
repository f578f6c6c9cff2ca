"""LLM distillation through the API against a local server speaking the chat-completions wire format:
batches of `distill_batch_size` or after the wait, the seed's five scores and threshold, DEPENDS_ON
edges the model names, the distillation budget and its fallback to the rules, the "remember this"
bypass, and a model answering nonsense."""

from __future__ import annotations

from datetime import datetime, timezone

import orjson
import pytest
from aiohttp import web

from tests.e2e.chat_stub import chat_reply, serve_chat

from events.codec import decode
from events.redis import keys
from gateway.http.appkeys import DISTILL_BATCHER, STORE

HIGH = {"IS": 0.9, "SU": 0.8, "PA": 0.8, "VD": 0.9, "RU": 0.9}
LOW = {"IS": 0.3, "SU": 0.2, "PA": 0.3, "VD": 0.4, "RU": 0.3}


def _answer(episodes: list[dict]) -> dict:
    """A stand-in model: a user turn with a digit is a durable fact, one saying "decided" a decision
    resting on the facts before it, anything else a low-scoring memory the threshold drops."""
    out = []
    for ep in episodes:
        memories: list[dict] = []
        for turn in ep["turns"]:
            if turn["role"] != "user":
                continue
            text = turn["content"]
            if "decided" in text:
                facts = [i for i, m in enumerate(memories) if m["category"] == "fact"]
                memories.append({"content": text, "category": "decision", "scores": HIGH, "depends_on": facts})
            elif any(ch.isdigit() for ch in text):
                memories.append({"content": text, "category": "fact", "scores": HIGH, "depends_on": []})
            else:
                memories.append({"content": text, "category": "fact", "scores": LOW, "depends_on": []})
        out.append({"index": ep["index"], "memories": memories})
    return {"episodes": out}


@pytest.fixture
async def chat_server(aiohttp_server):
    state: dict = {"distill": [], "entities": 0, "nonsense": False}

    async def complete(request: web.Request) -> web.Response:
        body = await request.json()
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        if "named entities" in system:
            state["entities"] += 1
            content = orjson.dumps({"entities": []}).decode()
        else:
            episodes = orjson.loads(user)["episodes"]
            state["distill"].append(len(episodes))
            content = "I think these are fine." if state["nonsense"] else orjson.dumps(_answer(episodes)).decode()
        return chat_reply(content)

    return await serve_chat(aiohttp_server, complete, state)


@pytest.fixture
def settings_overrides(chat_server) -> dict:
    return {"llm_endpoint": str(chat_server.make_url("/")), "llm_model": "qwen2.5-7b", "distill_batch_size": 2,
            "distill_max_wait_s": 300.0, "llm_distill_daily_limit": 2}


def _episode(*user_lines: str) -> dict:
    turns = []
    for line in user_lines:
        turns += [{"role": "user", "content": line}, {"role": "assistant", "content": "Okay."}]
    return {"kind": "conversation", "turns": turns}


async def _post(api, key, episode_id: str, body: dict) -> None:
    status, answer = await api.call("POST", "/api/v1/episodes", key, json={**body, "episode_id": episode_id})
    assert status == 201, answer


async def _view(api, key, episode_id: str, after: str) -> dict:
    status, view = await api.call("GET", f"/api/v1/episodes/{episode_id}", key, params={"after": after})
    assert status == 200, view
    return view


async def _distilled(api, key, episode_id: str) -> tuple[dict, list]:
    """The episode's view and its memory.committed events, once everything settled."""
    last = await api.settle()
    view = await _view(api, key, episode_id, last)
    wanted = set(view["distilled_to"])
    items = await api.client.app[STORE].redis.xrange(keys.STREAM)
    events = [e for e in (decode(p, f) for p, f in items) if e.type == "memory.committed"
              and e.data.memory_id in wanted]
    return view, events


async def test_llm_batches_score_and_link_decisions_to_their_facts(api, chat_server):
    key = await api.register("alice")
    batcher = api.client.app[DISTILL_BATCHER]
    await _post(api, key, "a", _episode("hello there", "the staging db runs Postgres 16 on port 5433",
                                        "we decided to move staging to the new host next week"))
    last = await api.settle()
    view = await _view(api, key, "a", last)
    assert (view["distill_status"], view["extractor"]) == ("processing", "llm:qwen2.5-7b"), view
    assert await batcher.run_once() == 0 and chat_server.state["distill"] == []     # 1 of 2, not old yet
    await _post(api, key, "b", _episode("my cat Miso is 4 years old"))
    await api.settle()
    assert await batcher.run_once() == 2 and chat_server.state["distill"] == [2]    # one call, both episodes
    view, events = await _distilled(api, key, "a")
    assert view["distill_status"] == "completed" and view["extractor"] == "llm:qwen2.5-7b", view
    by_category = {e.data.category: e.data for e in events}
    assert set(by_category) == {"fact", "decision"} and len(events) == 2               # "hello there" scored low
    fact, decision = by_category["fact"], by_category["decision"]
    assert decision.depends_on == (fact.memory_id,) and fact.source == "llm_distill"
    scores = dict(fact.scores)
    assert scores["VD"] == 0.9 and scores["overall"] == pytest.approx(0.2 * .9 + 0.2 * .8 + 0.15 * .8 + 0.25 * .9
                                                                      + 0.2 * .9)
    assert all(e.data.derived_from == "a" and e.data.extractor == "llm:qwen2.5-7b" for e in events)
    status, body = await api.call("POST", "/api/v1/graph/query", key, json={
        "query": "MATCH (d)-[:DEPENDS_ON]->(f) RETURN d.id, f.id", "after": view["position"]})
    assert status == 200 and [decision.memory_id, fact.memory_id] in body["rows"], body


async def test_the_oldest_episode_waits_at_most_the_max_wait(api, chat_server):
    key = await api.register("alice")
    batcher = api.client.app[DISTILL_BATCHER]
    await _post(api, key, "lonely", _episode("my laptop is a ThinkPad X1 gen 11"))
    await api.settle()
    assert await batcher.run_once() == 0
    api.clock.advance(ms=360_000)
    assert await batcher.run_once() == 1 and chat_server.state["distill"] == [1]
    view, events = await _distilled(api, key, "lonely")
    assert view["distill_status"] == "completed" and "ThinkPad" in events[0].data.content


async def test_a_spent_budget_falls_back_to_rules_but_remember_this_is_never_held_back(api, chat_server):
    key = await api.register("alice")
    batcher = api.client.app[DISTILL_BATCHER]
    for i in range(2):                                                              # budget: 2 calls a day
        await _post(api, key, f"x{i}", _episode(f"server {i} has 64 GB of RAM"))
        await _post(api, key, f"y{i}", _episode(f"my locker code is 40{i}7"))
        await api.settle()
        assert await batcher.run_once() == 2
    assert chat_server.state["distill"] == [2, 2]
    await _post(api, key, "z0", _episode("the office printer is on 10.0.0.77"))
    await _post(api, key, "z1", _episode("my passport number ends in 4471"))
    await api.settle()
    assert await batcher.run_once() == 2 and chat_server.state["distill"] == [2, 2]  # spent: not called
    view, events = await _distilled(api, key, "z0")
    assert (view["extractor"], view["reason"], view["distill_status"]) == ("learned:v1", "llm_budget_spent", "completed")
    assert events and "10.0.0.77" in events[0].data.content and events[0].data.extractor == "learned:v1"
    # "remember this" goes to the model at once, outside the budget
    await _post(api, key, "urgent", _episode("记住这个：我的车牌是 粤B 12345"))
    view, events = await _distilled(api, key, "urgent")
    assert (view["extractor"], view["reason"]) == ("llm:qwen2.5-7b", "remember_this"), view
    assert chat_server.state["distill"] == [2, 2, 1] and "12345" in events[0].data.content
    day = datetime.fromtimestamp(api.clock.now_ms() / 1000, tz=timezone.utc).strftime("%Y-%m-%d")
    redis = api.client.app[STORE].redis
    assert int(await redis.get(keys.llm_calls(day, "distill"))) == 3                 # 2 + the refused one
    assert int(await redis.get(keys.llm_calls(day))) == chat_server.state["entities"] > 0   # entities: their own


async def test_a_model_answering_nonsense_falls_back_to_rules(api, chat_server):
    key = await api.register("alice")
    chat_server.state["nonsense"] = True
    await _post(api, key, "n", _episode("our wifi password is hunter2-2024"))
    await api.settle()
    api.clock.advance(ms=360_000)
    assert await api.client.app[DISTILL_BATCHER].run_once() == 1
    view, events = await _distilled(api, key, "n")
    assert (view["extractor"], view["reason"]) == ("learned:v1", "llm_failed") and "hunter2-2024" in events[0].data.content
