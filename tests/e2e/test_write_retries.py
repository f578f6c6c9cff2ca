"""Idempotency-Key on every write route (issue 11 point 2: an `outcome_unknown` is retried with the same
key): a retry answers the original change and appends nothing, even when that change moved the
version the request names; the same key with another body is a 422."""

from __future__ import annotations

from tests.e2e.conftest import assert_error


async def test_versioned_writes_retried_with_their_key_answer_the_original(api):
    key = await api.register("alice")
    status, body = await api.commit(key, "the registry is at registry.local:5000")
    mid = body["memory_id"]
    correct = {"memory_id": mid, "content": "the registry is at registry.local:5443", "reason": "tls",
               "expected_version": 1}
    status, first = await api.call("POST", "/api/v1/feedback/correct", key, json=correct,
                                   headers={"Idempotency-Key": "c-1"})
    assert status == 200 and first["version"] == 2
    before = await api.log_length()
    # the retry names version 1, which the original moved to 2: still the original answer
    status, again = await api.call("POST", "/api/v1/feedback/correct", key, json=correct,
                                   headers={"Idempotency-Key": "c-1"})
    assert status == 200 and again == first
    status, body = await api.call("POST", "/api/v1/feedback/correct", key, json={**correct, "content": "other"},
                                  headers={"Idempotency-Key": "c-1"})
    assert status == 422
    assert_error(body, "idempotency_key_reused")
    status, body = await api.call("POST", "/api/v1/feedback/useful", key, json={"memory_id": mid},
                                  headers={"Idempotency-Key": "c-1"})  # the same key on another route
    assert status == 422
    for _ in range(2):
        status, gone = await api.call("DELETE", f"/api/v1/distilled/{mid}", key, params={"expected_version": "2"},
                                      headers={"Idempotency-Key": "d-1"})
        assert status == 200 and gone["version"] == 3, gone
    assert await api.log_length() == before + 1
