"""zhiyi_client.retry: what is retried (never a write that may have landed without an idempotency
record, never another 4xx), the bounded exponential back-off and `Retry-After`."""

from __future__ import annotations

import pytest

from zhiyi_client.errors import ConnectionFailed, error_from_response
from zhiyi_client.retry import Attempts, Kind, RetryPolicy, is_retryable


def answer(status: int, code: str, **headers: str):
    return error_from_response(status, {"error": {"code": code, "message": "m", "details": {}}}, headers)


TRANSIENT = [answer(429, "rate_limited"), answer(502, "http_error"), answer(503, "unavailable"),
             answer(503, "outcome_unknown"), answer(504, "projection_lag"),
             ConnectionFailed("refused", sent=False), ConnectionFailed("reset", sent=True)]
PERMANENT = [answer(400, "invalid_request"), answer(401, "unauthorized"), answer(403, "forbidden"),
             answer(404, "not_found"), answer(409, "version_conflict"), answer(422, "idempotency_key_reused"),
             answer(500, "internal_error"), answer(503, "log_reset")]


@pytest.mark.parametrize("error", TRANSIENT, ids=repr)
def test_reads_and_keyed_writes_retry_every_transient_failure(error):
    assert is_retryable(Kind.READ, error) and is_retryable(Kind.KEYED_WRITE, error)


@pytest.mark.parametrize("error", PERMANENT, ids=repr)
def test_nothing_retries_other_errors(error):
    assert not any(is_retryable(kind, error) for kind in Kind)


def test_unkeyed_writes_retry_only_when_the_server_certainly_did_nothing():
    safe = [answer(429, "rate_limited"), answer(503, "unavailable"), answer(503, "primary_unreachable"),
            answer(504, "projection_lag"), ConnectionFailed("refused", sent=False)]
    unsafe = [answer(502, "http_error"), answer(503, "outcome_unknown"), answer(504, "http_error"),
              ConnectionFailed("reset after sending", sent=True)]
    assert all(is_retryable(Kind.WRITE, e) for e in safe)
    assert not any(is_retryable(Kind.WRITE, e) for e in unsafe)


def test_backoff_doubles_up_to_the_cap_with_jitter_within_half_to_full():
    top = RetryPolicy(base_delay=0.25, max_delay=2.0, jitter=lambda: 1.0)
    low = RetryPolicy(base_delay=0.25, max_delay=2.0, jitter=lambda: 0.0)
    assert [top.backoff(n) for n in range(1, 7)] == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    assert [low.backoff(n) for n in range(1, 5)] == [0.125, 0.25, 0.5, 1.0]


def test_retry_after_is_a_lower_bound_and_too_long_a_wait_is_not_waited():
    policy = RetryPolicy(base_delay=0.25, max_retry_after=30.0, jitter=lambda: 1.0)
    assert policy.delay(Kind.READ, answer(429, "rate_limited", **{"Retry-After": "3"}), 1) == 3.0
    assert policy.delay(Kind.READ, answer(503, "primary_unreachable", **{"retry-after": "0"}), 1) == 0.25
    assert policy.delay(Kind.READ, answer(429, "rate_limited", **{"Retry-After": "120"}), 1) is None


def test_attempts_give_retries_then_raise_the_last_error():
    attempts = Attempts(RetryPolicy(retries=2, jitter=lambda: 1.0), Kind.KEYED_WRITE)
    error = answer(503, "outcome_unknown")
    assert [attempts.next_delay(error), attempts.next_delay(error)] == [0.25, 0.5]
    with pytest.raises(type(error)) as raised:
        attempts.next_delay(error)
    assert raised.value is error


def test_zero_retries_means_one_attempt():
    error = ConnectionFailed("refused", sent=False)
    with pytest.raises(ConnectionFailed):
        Attempts(RetryPolicy(retries=0), Kind.READ).next_delay(error)
