"""Distillation through the API (issue 14): an episode becomes memories with `derived_from`, linked to
`episode:{ns}:{id}` in the graph; chit-chat and failed tasks are skipped by the hard rules; the
episode's status moves pending -> completed with `distilled_to`. Rules without an LLM; with one, the
batches, the budget (and its fallback to rules) and the "remember this" bypass, against a local
server speaking the chat-completions wire format."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import assert_error
from tests.e2e.test_distillation_llm import _distilled
from tests.e2e.test_feedback import _versions

FACTS = {"kind": "conversation", "turns": [
    {"role": "user", "content": "你好！"},
    {"role": "assistant", "content": "你好，有什么可以帮你？"},
    {"role": "user", "content": "我的 ComfyUI 端口改成 8189 了，以后都用这个。"},
    {"role": "assistant", "content": "好的，已记下。"},
    {"role": "user", "content": "I prefer answers that start with the conclusion, keep them short."},
    {"role": "user", "content": "thanks!"}]}
CHIT_CHAT = {"kind": "conversation", "turns": [
    {"role": "user", "content": "haha good morning"}, {"role": "assistant", "content": "Good morning! How are you?"},
    {"role": "user", "content": "fine thanks, you?"}, {"role": "assistant", "content": "Doing well, thanks!"}]}
FAILED_TASK = {"kind": "task", "status": "error", "turns": [
    {"role": "user", "content": "Back up /srv to the NAS at 10.0.0.5 every night."},
    {"role": "tool", "content": "ssh: connect to host 10.0.0.5 port 22: Connection refused"}]}


async def _post(api, key, body, **fields):
    status, answer = await api.call("POST", "/api/v1/episodes", key, json={**body, **fields})
    assert status == 201, answer
    return answer


async def _view(api, key, episode_id, after="", **params):
    status, view = await api.call("GET", f"/api/v1/episodes/{episode_id}", key, params={"after": after, **params})
    assert status == 200, view
    return view


async def _graph_rows(api, key, text: str, after: str) -> list[list]:
    status, body = await api.call("POST", "/api/v1/graph/query", key, json={"query": text, "after": after})
    assert status == 200, body
    return body["rows"]


@pytest.fixture
def settings_overrides(request) -> dict:
    return getattr(request, "param", {})


@pytest.mark.parametrize("settings_overrides, extractor", [({}, "learned:v1"),
                                                          ({"distill_extractor": "rules"}, "rules:v1")],
                         indirect=["settings_overrides"])
async def test_an_episode_is_distilled_into_memories_linked_to_it(api, extractor):
    key = await api.register("alice")
    done = await _post(api, key, FACTS, episode_id="chat-42")
    last = await api.settle()
    view = await _view(api, key, "chat-42", last)
    assert view["distill_status"] == "completed" and view["extractor"] == extractor, view
    _, events = await _distilled(api, key, "chat-42")
    assert len(events) == 2 and all(e.data.extractor == extractor for e in events), events
    assert all(("learned" in dict(e.data.scores)) == (extractor == "learned:v1") for e in events), events
    assert len(view["distilled_to"]) == 2 and view["distilled_at"] and view["started_at"], view
    contents = []
    for memory_id in view["distilled_to"]:
        versions = await _versions(api, key, memory_id, last)
        assert versions["derived_from"] == "chat-42" and versions["namespace"] == "alice-main", versions
        contents.append(versions["content"])
    assert any("8189" in c and "ComfyUI" in c for c in contents), contents
    assert any("conclusion" in c for c in contents), contents
    assert not any("你好" in c or "thanks" in c for c in contents), contents
    # the graph links each memory to the episode's node
    rows = await _graph_rows(api, key, "MATCH (m)-[:DERIVED_FROM]->(e:episode) RETURN m.id, e.id", last)
    assert sorted(rows) == sorted([[m, "episode:alice-main:chat-42"] for m in view["distilled_to"]])
    # and recall finds what was distilled
    status, found = await api.recall(key, "ComfyUI 用哪个端口", after=last)
    assert status == 200 and "8189" in found["results"][0]["content"], found
    assert done["position"] <= last


async def test_chit_chat_and_failed_tasks_yield_nothing(api):
    key = await api.register("alice")
    before = await api.count_events("memory.committed")
    await _post(api, key, CHIT_CHAT, episode_id="hello")
    await _post(api, key, FAILED_TASK, episode_id="backup-1")
    last = await api.settle()
    chat, task = await _view(api, key, "hello", last), await _view(api, key, "backup-1", last)
    assert (chat["distill_status"], chat["reason"], chat["distilled_to"]) == ("skipped", "chit_chat", [])
    assert (task["distill_status"], task["reason"]) == ("skipped", "task_error"), task
    assert await api.count_events("memory.committed") == before


@pytest.mark.parametrize("settings_overrides", [{"run_reactions": False}], indirect=True)
async def test_an_episode_waits_pending_until_the_reactions_run(api):
    key = await api.register("alice")
    done = await _post(api, key, FACTS, episode_id="chat-1")
    view = await _view(api, key, "chat-1", done["position"])
    assert (view["distill_status"], view["distilled_to"], view["extractor"]) == ("pending", [], ""), view
