"""Consolidation and triggers with an LLM, against a local server speaking the chat-completions wire
format: the `distill` trigger drains the distillation queue (on its condition, not within its
cooldown), the quality backtrace scores the model's reconstructions, and a model that fails makes the
backtrace step fail, be skipped and be disabled after three runs (an event and a notice), and the
`backtrace` trigger be paused after three failures."""

from __future__ import annotations

import orjson
import pytest
from aiohttp import web

from tests.e2e.chat_stub import chat_reply, serve_chat

from tests.e2e.test_distillation_llm import _answer, _episode, _post

H = 3_600_000


@pytest.fixture
async def chat_server(aiohttp_server):
    state: dict = {"fail": False, "distill": 0, "reconstruct": 0}

    async def complete(request: web.Request) -> web.Response:
        body = await request.json()
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        if "Reconstruct the conversation" in system:
            state["reconstruct"] += 1
            if state["fail"]:
                return web.json_response({"error": {"message": "overloaded"}}, status=500)
            content = orjson.dumps({"conversation": f"user: {user}\nassistant: Okay."}).decode()
        elif "named entities" in system:
            content = orjson.dumps({"entities": []}).decode()
        else:
            state["distill"] += 1
            content = orjson.dumps(_answer(orjson.loads(user)["episodes"])).decode()
        return chat_reply(content)

    return await serve_chat(aiohttp_server, complete, state)


@pytest.fixture
def settings_overrides(chat_server) -> dict:
    return {"llm_endpoint": str(chat_server.make_url("/")), "llm_model": "qwen2.5-7b", "distill_batch_size": 2,
            "distill_max_wait_s": 300.0, "llm_distill_daily_limit": 0, "llm_daily_limit": 0}


async def _run(api) -> dict[str, dict]:
    await api.settle()
    status, body = await api.call("POST", "/api/v1/admin/triggers/run", json={})
    assert status == 200, body
    return {f["name"]: f for f in body["fired"]}


async def _distil(api, key, *episodes: tuple[str, ...]) -> None:
    """Post the episodes and let the `distill` trigger drain the queue (the wait moved past)."""
    for i, lines in enumerate(episodes):
        await _post(api, key, f"ep-{api.clock.now_ms()}-{i}", _episode(*lines))
    api.clock.advance(ms=301_000)
    assert "distill" in await _run(api)


async def test_the_distill_trigger_drains_the_queue_on_its_condition_not_within_its_cooldown(api, chat_server):
    key = await api.register("alice")
    await _post(api, key, "ep-1", _episode("The build server has 64 GB of RAM"))
    assert "distill" not in await _run(api)                      # 1 queued, not old yet
    api.clock.advance(ms=301_000)
    fired = await _run(api)
    assert fired["distill"]["result"] == {"episodes": 1} and chat_server.state["distill"] == 1
    await _post(api, key, "ep-2", _episode("The NAS has 8 TB of disk"))
    await _post(api, key, "ep-3", _episode("The router sits at 192.168.1.1"))
    assert "distill" not in await _run(api)                      # a full batch, but within its 1-minute cooldown
    api.clock.advance(ms=61_000)
    fired = await _run(api)
    assert fired["distill"]["result"] == {"episodes": 2} and chat_server.state["distill"] == 2


async def test_a_failing_step_is_skipped_then_disabled_after_three_runs(api, chat_server):
    key = await api.register("alice")
    await _distil(api, key, ("The build server has 64 GB of RAM", "The NAS keeps 30 daily snapshots"))
    status, run = await api.call("POST", "/api/v1/admin/consolidate", json={})
    assert status == 200
    backtrace = next(s for s in run["steps"] if s["step"] == "backtrace")
    assert backtrace["status"] == "ok" and backtrace["detail"]["sampled"] == 2, backtrace
    assert 0 < backtrace["detail"]["mean_cosine"] <= 1 and run["report"]["backtrace_mean_cosine"] is not None
    chat_server.state["fail"] = True
    for i in range(3):
        status, run = await api.call("POST", "/api/v1/admin/consolidate", json={})
        assert status == 200, run
        statuses = {s["step"]: s["status"] for s in run["steps"]}
        assert statuses == {"clusters": "ok", "prune": "ok", "calibration": "ok", "backtrace": "failed",
                            "patterns": "ok"}, statuses          # skipped; the other steps ran
        assert run["report"]["failed_steps"] == ["backtrace"]
    calls = chat_server.state["reconstruct"]
    status, state = await api.call("GET", "/api/v1/consolidation", params={"after": run["position"]})
    assert state["steps"]["backtrace"]["disabled"] is True and state["steps"]["backtrace"]["failures"] == 3
    assert "LLMError" in state["steps"]["backtrace"]["last_error"]
    assert [(n["kind"], n["subject"]) for n in state["notices"]] == [("step_disabled", "backtrace")]
    assert await api.count_events("consolidation.step_disabled") == 1
    status, run = await api.call("POST", "/api/v1/admin/consolidate", json={})
    backtrace = next(s for s in run["steps"] if s["step"] == "backtrace")
    assert backtrace["status"] == "disabled" and chat_server.state["reconstruct"] == calls
    status, body = await api.call("POST", "/api/v1/admin/consolidation/steps/backtrace/enable", json={})
    assert status == 200 and body["changed"] is True
    chat_server.state["fail"] = False
    status, run = await api.call("POST", "/api/v1/admin/consolidate", json={})
    assert next(s for s in run["steps"] if s["step"] == "backtrace")["status"] == "ok"


async def test_three_failures_pause_a_trigger_and_raise_a_notice(api, chat_server):
    key = await api.register("alice")
    lines = [f"Service {i} listens on port {9000 + i}" for i in range(20)]
    await _distil(api, key, tuple(lines[:20]), tuple(f"Host {i} has {i + 2} cores" for i in range(20)))
    api.clock.advance(ms=61_000)
    await _distil(api, key, tuple(f"Disk {i} holds {i + 1} TB" for i in range(15)))
    status, listed = await api.call("GET", "/api/v1/triggers")
    backtrace = next(t for t in listed["triggers"] if t["name"] == "backtrace")
    assert backtrace["holds"] and backtrace["disabled"] is None, backtrace     # > 50 distilled
    chat_server.state["fail"] = True
    for failures in (1, 2, 3):
        fired = await _run(api)
        assert fired["backtrace"]["status"] == "failed" and fired["backtrace"]["failures"] == failures
        api.clock.advance(ms=25 * H)
    status, listed = await api.call("GET", "/api/v1/triggers", params=None)
    backtrace = next(t for t in listed["triggers"] if t["name"] == "backtrace")
    assert backtrace["paused"] is True and backtrace["failures"] == 3
    assert backtrace["paused_reason"].startswith("3 failures in a row")
    assert "backtrace" not in await _run(api)
    assert await api.count_events("notice.raised") == 1
    status, body = await api.call("POST", "/api/v1/admin/triggers/backtrace/resume", json={})
    assert status == 200 and body["changed"] is True
    chat_server.state["fail"] = False
    fired = await _run(api)
    assert fired["backtrace"]["status"] == "fired" and fired["backtrace"]["result"]["sampled"] > 0
