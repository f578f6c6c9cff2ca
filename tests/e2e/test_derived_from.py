"""`derived_from` through the HTTP API (issue 13 point 2): the client's opaque episode id is accepted on
/commit and /batch-commit, validated at the edge (nothing appended when it is refused), shown by the
versions endpoint, and in the graph as memory -DERIVED_FROM-> episode:<namespace>:<id> (the same id
in two namespaces is two episodes); recall reaches an answer through its episode, not through commit
order."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import ADMIN_KEY, assert_error
from tests.e2e.test_feedback import _commit, _versions

LONGEST = "e" * 128


async def _rows(api, key, text: str, after: str = "") -> list[list]:
    status, body = await api.call("POST", "/api/v1/graph/query", key, json={"query": text, "after": after})
    assert status == 200, body
    return body["rows"]


async def test_derived_from_is_accepted_and_shown_by_versions(api):
    key = await api.register("alice")
    chat, _ = await _commit(api, key, "the user's cat is called Miso", derived_from="chat-4711")
    longest, _ = await _commit(api, key, "the user works night shifts", derived_from=LONGEST)
    plain, _ = await _commit(api, key, "the office wifi is slow")
    status, batch = await api.call("POST", "/api/v1/batch-commit", key, json={"entries": [
        {"content": "the build server is called forge", "derived_from": "任务:迁移 CI / step 2"},
        {"content": "forge runs Ubuntu 22.04"}]})
    assert status == 201, batch
    pos = batch["position"]
    expected = {chat: "chat-4711", longest: LONGEST, plain: "",
                batch["results"][0]["memory_id"]: "任务:迁移 CI / step 2", batch["results"][1]["memory_id"]: ""}
    for memory_id, episode in expected.items():
        assert (await _versions(api, key, memory_id, pos))["derived_from"] == episode


BAD = [
    (7, "must be a string"),
    (True, "must be a string"),
    (["chat-1"], "must be a string"),
    ({"id": "chat-1"}, "must be a string"),
    ("", "must not be empty"),
    ("  \u3000", "must not be empty"),
    ("chat\n1", "control characters"),
    ("e" * 129, "at most 128 characters"),
]


@pytest.mark.parametrize("value, why", BAD, ids=[
    "int", "bool", "list", "object", "empty", "blank", "control", "129-chars"])
async def test_a_bad_derived_from_is_a_400_naming_the_field_and_appends_nothing(api, value, why):
    key = await api.register("alice")
    before = await api.log_length()
    status, body = await api.commit(key, "the user's cat is called Miso", derived_from=value)
    assert status == 400, body
    assert_error(body, "invalid_request")
    assert body["error"]["details"]["field"] == "derived_from" and why in body["error"]["message"], body
    # in a batch, one bad entry refuses the whole batch and names its index
    status, body = await api.call("POST", "/api/v1/batch-commit", key, json={"entries": [
        {"content": "fine", "derived_from": "chat-1"}, {"content": "bad", "derived_from": value}]})
    assert status == 400, body
    assert_error(body, "invalid_request")
    assert body["error"]["details"]["field"] == "derived_from" and body["error"]["details"]["index"] == 1, body
    # JSON null is refused like every null in the API
    status, body = await api.commit(key, "x", derived_from=None)
    assert status == 400 and body["error"]["details"]["field"] == "derived_from", body
    assert await api.log_length() == before


async def test_the_graph_links_memories_to_their_episode_scoped_by_namespace(api):
    alice = await api.register("alice")
    bob = await api.register("bob")
    a1, _ = await _commit(api, alice, "the user's cat is called Miso", derived_from="chat-1")
    a2, _ = await _commit(api, alice, "the user moved to Lisbon in March", derived_from="chat-1")
    other, _ = await _commit(api, alice, "the user's car is a blue Golf", derived_from="chat-2")
    shared, _ = await _commit(api, alice, "the team standup is at 9:30", namespace="shared", derived_from="chat-1")
    b1, pos = await _commit(api, bob, "the build server is called forge", derived_from="chat-1")

    # the same client id in alice-main, shared and bob-main: three episode nodes, one per namespace
    rows = await _rows(api, ADMIN_KEY, "MATCH (e:episode) RETURN e.id, e.namespace, e.label", pos)
    assert sorted(map(tuple, rows)) == [("episode:alice-main:chat-1", "alice-main", "chat-1"),
                                        ("episode:alice-main:chat-2", "alice-main", "chat-2"),
                                        ("episode:bob-main:chat-1", "bob-main", "chat-1"),
                                        ("episode:shared:chat-1", "shared", "chat-1")]
    rows = await _rows(api, alice, "MATCH (m)-[:DERIVED_FROM]->(e:episode) RETURN m.id, e.id", pos)
    assert sorted(map(tuple, rows)) == sorted([(a1, "episode:alice-main:chat-1"), (a2, "episode:alice-main:chat-1"),
                                               (other, "episode:alice-main:chat-2"),
                                               (shared, "episode:shared:chat-1")])   # bob's is not alice's to see
    rows = await _rows(api, bob, "MATCH (m)-[:DERIVED_FROM]->(e:episode) RETURN m.id, e.id", pos)
    assert sorted(map(tuple, rows)) == sorted([(b1, "episode:bob-main:chat-1"), (shared, "episode:shared:chat-1")])

    # two memories of one episode meet at its node: a two-hop path of weight 1 x 1
    status, nav = await api.call("POST", "/api/v1/graph/navigate", alice, json={"source": a1, "target": a2})
    assert status == 200, nav
    best = nav["paths"][0]
    assert best["score"] == 1.0 and [n["id"] for n in best["nodes"]] == [a1, "episode:alice-main:chat-1", a2]
    assert [e["relation_type"] for e in best["edges"]] == ["DERIVED_FROM", "DERIVED_FROM"]
    # the same id in another namespace is another episode: no path through an episode node
    status, nav = await api.call("POST", "/api/v1/graph/navigate", alice, json={"source": a1, "target": shared})
    assert status == 200, nav
    assert all(n["type"] != "episode" for p in nav["paths"] for n in p["nodes"]), nav


TWO_CHATS = [("harbour", "Harbour question: when does the harbour ferry leave for the island?"),
             ("mountain", "Mountain question: is the summit trail open in winter?"),
             ("harbour", "At six every morning, from pier two."),
             ("mountain", "Closed from November to March because of snow."),
             ("harbour", "Thanks, see you there."),
             ("mountain", "Great, goodbye.")]


async def _ranks(api, key, namespace: str, after: int, context: float) -> list[str]:
    status, body = await api.call("POST", "/api/v1/recall", key, json={
        "query": "when does the harbour ferry leave", "namespace": namespace, "top_k": 10, "diversity": 0,
        "context": context, "cache": False, "after": after})
    assert status == 200, body
    return [r["content"] for r in body["results"]]


async def test_recall_reaches_an_answer_through_its_episode_not_through_commit_order(api):
    # An agent interleaves two conversations. With derived_from, the ferry question's answer (which
    # shares no word with it) is its context neighbour although another chat's turn was committed in
    # between; without it (bob, the same turns), nothing is linked (a short run is no evidence of one
    # conversation) and context changes nothing.
    key = await api.register("alice")
    status, body = await api.call("POST", "/api/v1/batch-commit", key, json={"entries": [
        {"content": text, "derived_from": f"chat-{chat}"} for chat, text in TWO_CHATS]})
    assert status == 201, body
    bob = await api.register("bob")
    status, plain = await api.call("POST", "/api/v1/batch-commit", bob, json={
        "entries": [{"content": text} for _, text in TWO_CHATS]})
    assert status == 201, plain
    question, answer, other = TWO_CHATS[0][1], TWO_CHATS[2][1], TWO_CHATS[1][1]
    with_episodes = await _ranks(api, key, "alice-main", plain["position"], 0.6)
    assert with_episodes[:2] == [question, answer]
    alone = await _ranks(api, key, "alice-main", plain["position"], 0.0)
    assert alone.index(answer) > 1
    # the other chat's turn committed right after the question is no neighbour of it
    assert with_episodes.index(other) >= alone.index(other)
    assert await _ranks(api, bob, "bob-main", plain["position"], 0.6) == \
        await _ranks(api, bob, "bob-main", plain["position"], 0.0)
