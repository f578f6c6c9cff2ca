"""Episodes (L0) through the HTTP API: committed immutable, scoped to their namespace, validated at
the edge (nothing appended when refused), read back with their distillation status."""

from __future__ import annotations

from tests.e2e.conftest import ADMIN_KEY, assert_error

CHAT = [{"role": "user", "content": "我的 ComfyUI 端口改成 8189 了", "at": "2026-12-04T09:30:00+08:00"},
        {"role": "assistant", "content": "好的，记下了。"}]


async def _episode(api, key, **fields):
    body = {"kind": "conversation", "turns": CHAT, **fields}
    return await api.call("POST", "/api/v1/episodes", key, json=body)


async def _get(api, key, episode_id, **params):
    return await api.call("GET", f"/api/v1/episodes/{episode_id}", key, params=params)


async def test_an_episode_is_committed_read_back_and_immutable(api):
    key = await api.register("alice")
    status, body = await _episode(api, key, episode_id="chat-1")
    assert status == 201, body
    assert body["episode_id"] == "chat-1" and body["namespace"] == "alice-main" and not body["duplicate"]
    status, view = await _get(api, key, "chat-1", after=body["position"])
    assert status == 200, view
    assert view["turns"] == CHAT and view["kind"] == "conversation" and view["status"] == "ok"
    assert view["agent_id"] == "alice" and view["position"] == body["position"]
    assert view["distill_status"] in ("pending", "processing", "completed", "skipped")
    # the same body again: a duplicate, nothing appended; another body: 409
    before = await api.log_length()
    status, again = await _episode(api, key, episode_id="chat-1")
    assert status == 200 and again["duplicate"] and again["episode_id"] == "chat-1", again
    status, other = await _episode(api, key, episode_id="chat-1", status="error")
    assert status == 409, other
    assert_error(other, "episode_exists")
    assert await api.log_length() == before
    # ids are scoped to their namespace: the same id in shared is another episode
    status, shared = await _episode(api, key, episode_id="chat-1", namespace="shared", kind="task")
    assert status == 201 and shared["namespace"] == "shared", shared
    status, view = await _get(api, key, "chat-1", namespace="shared", after=shared["position"])
    assert status == 200 and view["kind"] == "task", view


async def test_generated_ids_follow_the_idempotency_key(api):
    key = await api.register("alice")
    status, first = await _episode(api, key)
    status2, second = await _episode(api, key)
    assert status == status2 == 201 and first["episode_id"] != second["episode_id"]
    headers = {"Idempotency-Key": "job-77"}
    status, keyed = await api.call("POST", "/api/v1/episodes", key, json={"kind": "task", "turns": CHAT},
                                   headers=headers)
    assert status == 201, keyed
    status, retry = await api.call("POST", "/api/v1/episodes", key, json={"kind": "task", "turns": CHAT},
                                   headers=headers)
    assert status == 200 and retry["duplicate"] and retry["episode_id"] == keyed["episode_id"], retry
    status, reused = await api.call("POST", "/api/v1/episodes", key, json={"kind": "conversation", "turns": CHAT},
                                    headers=headers)
    assert status == 422, reused
    assert_error(reused, "idempotency_key_reused")


async def test_a_batch_is_atomic_and_reports_duplicates(api):
    key = await api.register("alice")
    status, one = await _episode(api, key, episode_id="a")
    assert status == 201
    status, body = await api.call("POST", "/api/v1/episodes/batch", key, json={"episodes": [
        {"episode_id": "a", "kind": "conversation", "turns": CHAT},
        {"episode_id": "b", "kind": "task", "status": "skipped", "turns": [{"role": "tool", "content": "exit 0"}]}]})
    assert status == 201, body
    assert [(r["episode_id"], r["duplicate"]) for r in body["results"]] == [("a", True), ("b", False)]
    status, view = await _get(api, key, "b", after=body["position"])
    assert status == 200 and view["status"] == "skipped", view
    before = await api.log_length()
    status, body = await api.call("POST", "/api/v1/episodes/batch", key, json={"episodes": [
        {"episode_id": "c", "kind": "conversation", "turns": CHAT},
        {"episode_id": "a", "kind": "task", "turns": CHAT}]})        # a exists with another body
    assert status == 409, body
    assert_error(body, "episode_exists")
    assert body["error"]["details"]["index"] == 1
    assert await api.log_length() == before


async def test_episodes_follow_namespace_rules(api):
    alice = await api.register("alice")
    bob = await api.register("bob")
    status, body = await _episode(api, alice, episode_id="secret", namespace="alice-ephemeral")
    assert status == 201, body
    status, body = await _get(api, bob, "secret", namespace="alice-ephemeral", after=body["position"])
    assert status == 404, body
    assert_error(body, "not_found")
    status, body = await _episode(api, bob, namespace="alice-main")
    assert status == 403, body
    status, body = await _get(api, alice, "never-committed")
    assert status == 404, body
    # the admin key acts for a named agent
    status, body = await api.call("POST", "/api/v1/episodes", ADMIN_KEY,
                                  json={"kind": "conversation", "turns": CHAT, "agent_id": "bob"})
    assert status == 201 and body["namespace"] == "bob-main", body
    status, body = await api.call("POST", "/api/v1/episodes", ADMIN_KEY, json={"kind": "conversation", "turns": CHAT})
    assert status == 400, body
    assert_error(body, "agent_id_required")


BAD = [
    ({"turns": CHAT}, "kind", "is required"),
    ({"kind": "chat", "turns": CHAT}, "kind", "must be one of"),
    ({"kind": "task", "status": "done", "turns": CHAT}, "status", "must be one of"),
    ({"kind": "task"}, "turns", "is required"),
    ({"kind": "task", "turns": []}, "turns", "must not be empty"),
    ({"kind": "task", "turns": "hello"}, "turns", "must be a list"),
    ({"kind": "task", "turns": ["hello"]}, "turns[0]", "must be an object"),
    ({"kind": "task", "turns": [{"content": "x"}]}, "turns[0].role", "is required"),
    ({"kind": "task", "turns": [{"role": "bot", "content": "x"}]}, "turns[0].role", "must be one of"),
    ({"kind": "task", "turns": [{"role": "user"}]}, "turns[0].content", "is required"),
    ({"kind": "task", "turns": [{"role": "user", "content": " \u3000"}]}, "turns[0].content", "must not be empty"),
    ({"kind": "task", "turns": [{"role": "user", "content": 5}]}, "turns[0].content", "must be a string"),
    ({"kind": "task", "turns": [{"role": "user", "content": "x", "at": "yesterday"}]}, "turns[0].at", "ISO 8601"),
    ({"kind": "task", "turns": CHAT, "episode_id": ""}, "episode_id", "must not be empty"),
    ({"kind": "task", "turns": CHAT, "episode_id": "a\nb"}, "episode_id", "control characters"),
    ({"kind": "task", "turns": CHAT, "episode_id": "e" * 129}, "episode_id", "at most 128"),
    ({"kind": "task", "turns": CHAT, "episode_id": 7}, "episode_id", "must be a string"),
    ({"kind": "task", "turns": CHAT, "namespace": "a b"}, "namespace", "invalid format"),
]


async def test_a_bad_episode_is_a_400_naming_the_field_and_appends_nothing(api):
    key = await api.register("alice")
    before = await api.log_length()
    for body, field, why in BAD:
        status, answer = await api.call("POST", "/api/v1/episodes", key, json=body)
        assert status == 400, (body, answer)
        assert_error(answer)
        assert answer["error"]["details"]["field"] == field and why in answer["error"]["message"], answer
        status, answer = await api.call("POST", "/api/v1/episodes/batch", key,
                                        json={"episodes": [{"kind": "task", "turns": CHAT}, body]})
        assert status == 400 and answer["error"]["message"].startswith("episodes[1]."), answer
    assert await api.log_length() == before


async def test_unknown_fields_too_large_and_bad_batches_are_refused(api):
    key = await api.register("alice")
    before = await api.log_length()
    cases = [
        ("/api/v1/episodes", {"kind": "task", "turns": CHAT, "title": "x"}, 400, "unknown_field"),
        ("/api/v1/episodes", {"kind": "task", "turns": [{"role": "user", "content": "x", "name": "y"}]}, 400,
         "unknown_field"),
        ("/api/v1/episodes", {"kind": "task", "turns": [{"role": "user", "content": "字" * 90_000}]}, 413,
         "payload_too_large"),
        ("/api/v1/episodes/batch", {"episodes": []}, 400, "invalid_request"),
        ("/api/v1/episodes/batch", {"episodes": [{"kind": "task", "turns": CHAT}] * 101}, 400, "invalid_request"),
        ("/api/v1/episodes/batch", {"episodes": [{"kind": "task", "turns": CHAT, "agent_id": "alice"}]}, 400,
         "unknown_field"),
        ("/api/v1/episodes/batch", {"episodes": [{"episode_id": "x", "kind": "task", "turns": CHAT}] * 2}, 400,
         "invalid_request"),
    ]
    for path, body, status_want, code in cases:
        status, answer = await api.call("POST", path, key, json=body)
        assert status == status_want, (path, answer)
        assert_error(answer, code)
    for bad in ("a%09b", "e" * 129):
        status, answer = await api.call("GET", f"/api/v1/episodes/{bad}", key)
        assert status == 400, answer
    assert await api.log_length() == before
