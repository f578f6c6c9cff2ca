"""zhiyi_client.errors: the server's error shape becomes one exception hierarchy."""

from __future__ import annotations

import pytest

from zhiyi_client import errors as e


def body(code: str, details: dict | None = None) -> dict:
    return {"error": {"code": code, "message": f"about {code}", "details": details or {}}}


@pytest.mark.parametrize(("status", "code", "cls"), [
    (400, "invalid_request", e.BadRequest), (400, "unknown_field", e.BadRequest), (401, "unauthorized", e.Unauthorized),
    (403, "forbidden", e.Forbidden), (403, "admin_required", e.Forbidden), (404, "not_found", e.NotFound),
    (404, "unknown_agent", e.NotFound), (409, "agent_exists", e.Conflict), (409, "version_conflict", e.VersionConflict),
    (413, "payload_too_large", e.PayloadTooLarge), (422, "unprocessable", e.Unprocessable),
    (422, "idempotency_key_reused", e.IdempotencyKeyReused), (429, "rate_limited", e.RateLimited),
    (500, "internal_error", e.ServerError), (503, "unavailable", e.Unavailable),
    (503, "outcome_unknown", e.OutcomeUnknown), (504, "projection_lag", e.ProjectionLag),
    (405, "method_not_allowed", e.ZhiyiError),
])
def test_each_status_and_code_has_its_class(status, code, cls):
    error = e.error_from_response(status, body(code, {"field": "x"}))
    assert type(error) is cls and isinstance(error, e.ZhiyiError)
    assert (error.status, error.code, error.message, error.details) == (status, code, f"about {code}", {"field": "x"})


def test_specific_classes_are_caught_by_their_general_ones():
    assert issubclass(e.VersionConflict, e.Conflict) and issubclass(e.OutcomeUnknown, e.Unavailable)
    assert issubclass(e.IdempotencyKeyReused, e.Unprocessable) and issubclass(e.ConnectionFailed, e.ZhiyiError)


def test_details_and_headers_are_read():
    stale = e.error_from_response(409, body("version_conflict", {"current_version": 4}))
    assert stale.current_version == 4
    limited = e.error_from_response(429, body("rate_limited"), {"Retry-After": "2"})
    assert limited.retry_after == 2.0
    assert e.error_from_response(429, body("rate_limited")).retry_after is None


def test_an_answer_not_in_the_error_shape_still_raises():
    proxy = e.error_from_response(502, "<html>Bad Gateway</html>")
    assert type(proxy) is e.Unavailable and proxy.code == "http_error" and "Bad Gateway" in proxy.message
    assert type(e.error_from_response(418, {"unexpected": True})) is e.ZhiyiError
