"""With an LLM configured, its verdict on a detected conflict comes first (DESIGN §6), against a local
server speaking the OpenAI /v1/chat/completions format: `compatible` closes a false alarm, `updates`
lets the later memory win, `contradicts` (or an unusable answer) leaves the conflict to the rules."""

from __future__ import annotations

import orjson
import pytest
from aiohttp import web

from tests.e2e.chat_stub import chat_reply, serve_chat

from tests.e2e.test_conflicts import _conflict


@pytest.fixture
async def chat_server(aiohttp_server):
    state = {"verdicts": []}

    async def complete(request: web.Request) -> web.Response:
        body = await request.json()
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if "possibly contradicting" not in system:          # the entity extractor's calls
            answer = {"entities": []}
        elif "Grafana" in user:
            answer = {"relation": "compatible", "reason": "two dashboards"}
        elif "backup" in user:
            answer = {"relation": "updates", "reason": "the schedule moved"}
        elif "Postgres" in user:
            answer = {"relation": "contradicts", "reason": "two versions"}
        else:
            return web.json_response({"choices": [{"index": 0, "message": {"role": "assistant",
                                                                           "content": "no idea"}}]})
        if "possibly contradicting" in system:
            state["verdicts"].append(orjson.loads(user))
        return chat_reply(orjson.dumps(answer).decode())

    return await serve_chat(aiohttp_server, complete, state)


@pytest.fixture
def settings_overrides(chat_server) -> dict:
    return {"llm_endpoint": str(chat_server.make_url("/")), "llm_api_key": "sk-test", "llm_model": "judge-llm"}


async def test_the_models_verdict_comes_first(api, chat_server):
    alice, bob = await api.register("alice"), await api.register("bob")
    grafana, _ = await _conflict(api, alice, bob, "Grafana listens on port 3000 in the homelab",
                                 "In the homelab Grafana listens on port 3300")
    backup, newer_backup = await _conflict(api, alice, bob, "The NAS backup job runs at 02:00 every night",
                                           "The NAS backup job runs nightly at 03:30")
    postgres, _ = await _conflict(api, alice, bob, "The staging database is Postgres 14",
                                  "Staging runs Postgres 16 for its database")
    comfy, _ = await _conflict(api, alice, bob, "The ComfyUI web UI runs on port 8188",
                               "The ComfyUI web UI runs on port 8189")   # the model answers nonsense
    status, listed = await api.call("GET", "/api/v1/conflicts", alice, params={"status": "all",
                                                                             "after": await api.settle()})
    by_id = {c["conflict_id"]: c for c in listed["conflicts"]}
    assert by_id[grafana["conflict_id"]]["resolution"]["rule"] == "llm:compatible"
    assert by_id[grafana["conflict_id"]]["resolution"]["strategy"] == "keep_both"
    resolved = by_id[backup["conflict_id"]]["resolution"]
    assert (resolved["rule"], resolved["winner"], resolved["loser"]) == \
        ("llm:updates", newer_backup, backup["memory_id"])
    status, versions = await api.call("GET", f"/api/v1/memory/{backup['memory_id']}/versions", alice)
    assert versions["status"] == "deprecated"
    assert by_id[postgres["conflict_id"]]["status"] == "open"      # contradicts: a person decides
    assert by_id[comfy["conflict_id"]]["status"] == "open"         # no usable answer: the rules (none apply)
    asked = chat_server.state["verdicts"][0]
    assert set(asked) == {"older", "newer"} and "3000" in asked["older"]["content"]
