"""Every error code the server emits in `{"error": {"code", ...}}` — the one list.

It lives in `commands` (not `gateway`) so that the write side's domain errors can name their codes
too: `gateway` imports `commands`, never the other way round. The HTTP status of each code is the
gateway's business (`gateway/http/errors.py`); README's "Error codes" table lists status, code and meaning,
and `tests/unit/test_error_codes.py` keeps the three in step (and greps the source for stray codes).
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    # 400 — the request itself is wrong
    BAD_REQUEST = "bad_request"  # a protocol-level 400 (aiohttp's parser: bad header, bad chunk, ...)
    INVALID_JSON = "invalid_json"
    INVALID_REQUEST = "invalid_request"
    INVALID_QUERY = "invalid_query"
    UNKNOWN_FIELD = "unknown_field"
    AGENT_ID_REQUIRED = "agent_id_required"
    RESERVED_AGENT_ID = "reserved_agent_id"
    UNKNOWN_DEPENDENCY = "unknown_dependency"
    NO_MEMORIES = "no_memories"
    NO_GOLDEN_SET = "no_golden_set"
    # 401 / 403
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    ADMIN_REQUIRED = "admin_required"
    # 404 / 405
    NOT_FOUND = "not_found"
    UNKNOWN_AGENT = "unknown_agent"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    # 409
    CONFLICT = "conflict"
    VERSION_CONFLICT = "version_conflict"
    AGENT_EXISTS = "agent_exists"
    NAMESPACE_TAKEN = "namespace_taken"
    EPISODE_EXISTS = "episode_exists"
    BACKUP_RUNNING = "backup_running"
    # 413 / 415 / 422
    PAYLOAD_TOO_LARGE = "payload_too_large"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    IDEMPOTENCY_KEY_REUSED = "idempotency_key_reused"
    UNPROCESSABLE = "unprocessable"  # well-formed, but meaningless in the current state (e.g. after= beyond the log)
    # 429
    RATE_LIMITED = "rate_limited"
    # 5xx
    INTERNAL_ERROR = "internal_error"
    UNAVAILABLE = "unavailable"
    LOG_RESET = "log_reset"
    OUTCOME_UNKNOWN = "outcome_unknown"
    PROJECTION_LAG = "projection_lag"
    PRIMARY_UNREACHABLE = "primary_unreachable"  # a LAN replica could not reach its primary to forward a write
    HTTP_ERROR = "http_error"  # any other HTTP error status aiohttp raises (e.g. 414, 431)
