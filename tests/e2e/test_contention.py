"""Writes racing on one memory through the real HTTP app (issue 11 point 6): a write without an
expected version takes the next version atomically (append.lua) and never fails for the race; a
delete race has one winner and version conflicts (with the current version) for the losers."""

from __future__ import annotations

import asyncio

from events.redis import keys
from events.codec import decode
from gateway.http.appkeys import STORE
from tests.e2e.conftest import assert_error

N = 20


async def _commit(api, key: str, content: str) -> str:
    status, body = await api.commit(key, content)
    assert status == 201, body
    return body["memory_id"]


async def _events_of(api, memory_id: str, event_type: str) -> list:
    items = await api.client.app[STORE].redis.xrange(keys.STREAM)
    evs = [decode(pos, fields) for pos, fields in items]
    return [e for e in evs if e.type == event_type and getattr(e.data, "memory_id", None) == memory_id]


async def test_concurrent_unversioned_corrections_all_succeed_with_contiguous_versions(api):
    key = await api.register("alice")
    mid = await _commit(api, key, "the deploy window opens at 09:00")
    answers = await asyncio.gather(*[
        api.call("POST", "/api/v1/feedback/correct", key,
                 json={"memory_id": mid, "content": f"the deploy window opens at {10 + i}:00", "reason": f"r{i}"})
        for i in range(N)])
    assert [status for status, _ in answers] == [200] * N, answers
    versions = sorted(body["version"] for _, body in answers)
    assert versions == list(range(2, N + 2))
    # each event records the version its answer gave, and the contents match
    corrected = await _events_of(api, mid, "memory.corrected")
    by_version = {e.data.version: e.data.content for e in corrected}
    assert sorted(by_version) == versions
    for _, body in answers:
        event = next(e for e in corrected if e.position == body["position"])
        assert event.data.version == body["version"]
    # the memories projection agrees: version N+1, a history of versions 1..N+1 with those contents
    last = max(body["position"] for _, body in answers)
    status, v = await api.call("GET", f"/api/v1/memory/{mid}/versions", key, params={"after": last})
    assert status == 200, v
    assert v["version"] == N + 1
    assert [h["version"] for h in v["versions"]] == list(range(1, N + 2))
    assert {h["version"]: h["content"] for h in v["versions"][1:]} == by_version
    assert v["content"] == by_version[N + 1]


async def test_unversioned_deprecate_after_a_correction_takes_the_next_version(api):
    key = await api.register("alice")
    mid = await _commit(api, key, "the cache ttl is 60 s")
    correct = api.call("POST", "/api/v1/feedback/correct", key,
                       json={"memory_id": mid, "content": "the cache ttl is 90 s", "reason": "tuned"})
    deprecate = api.call("POST", "/api/v1/feedback/deprecate", key, json={"memory_id": mid, "reason": "gone"})
    (s1, b1), (s2, b2) = await asyncio.gather(correct, deprecate)
    assert (s1, s2) == (200, 200), (b1, b2)
    assert sorted([b1["version"], b2["version"]]) == [2, 3]


async def test_concurrent_deletes_have_one_winner_and_version_conflicts(api):
    key = await api.register("alice")
    mid = await _commit(api, key, "the staging database is pg-14")
    answers = await asyncio.gather(*[
        api.call("DELETE", f"/api/v1/distilled/{mid}", key, params={"expected_version": "1"}) for _ in range(N)])
    statuses = sorted(status for status, _ in answers)
    assert statuses == [200] + [409] * (N - 1), answers
    for status, body in answers:
        if status == 409:
            assert_error(body, "version_conflict")
            assert body["error"]["details"]["current_version"] == 2
    assert len(await _events_of(api, mid, "memory.deleted")) == 1
    # without an expected version: the same answer, and still one event
    status, body = await api.call("DELETE", f"/api/v1/distilled/{mid}", key)
    assert status == 409, body
    assert_error(body, "version_conflict")
    assert body["error"]["details"]["current_version"] == 2
    # an unknown id stays 404
    status, body = await api.call("DELETE", "/api/v1/distilled/00000000-0000-4000-8000-000000000000", key)
    assert status == 404
    assert_error(body, "not_found")
    # a correction of a deleted memory is still a 404
    status, body = await api.call("POST", "/api/v1/feedback/correct", key,
                                  json={"memory_id": mid, "content": "x", "reason": "y"})
    assert status == 404, body


async def test_unversioned_deletes_race_one_winner(api):
    key = await api.register("alice")
    mid = await _commit(api, key, "the queue is rabbitmq")
    answers = await asyncio.gather(*[api.call("DELETE", f"/api/v1/distilled/{mid}", key) for _ in range(N)])
    assert sorted(status for status, _ in answers) == [200] + [409] * (N - 1), answers
    assert len(await _events_of(api, mid, "memory.deleted")) == 1


async def test_more_concurrent_requests_than_redis_connections_wait_for_one(api):
    """200 concurrent commits and recalls through a client pool of 64 connections: every request
    waits for a connection instead of failing with 503 `unavailable` (too many connections)."""
    key = await api.register("alice")
    commits = [api.commit(key, f"fact number {i}") for i in range(150)]
    recalls = [api.recall(key, f"fact {i}", cache=False) for i in range(50)]
    answers = await asyncio.gather(*commits, *recalls)
    assert [status for status, _ in answers] == [201] * 150 + [200] * 50, \
        [body for status, body in answers if status >= 300][:3]
