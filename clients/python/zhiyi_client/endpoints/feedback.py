"""Feedback on memories: useful / not useful votes, deprecation, correction."""

from __future__ import annotations

from ..calls import Call, fields
from ..models import FeedbackResult, MemoryChange
from ._build import keyed


def feedback_useful(memory_id: str, *, reason: str | None = None, agent_id: str | None = None,
                    idempotency_key: str | None = None) -> Call[FeedbackResult]:
    """Vote the memory useful (`POST /api/v1/feedback/useful`); an agent's latest vote replaces its
    earlier ones."""
    return _vote("useful", memory_id, reason, agent_id, idempotency_key)


def feedback_not_useful(memory_id: str, *, reason: str | None = None, agent_id: str | None = None,
                        idempotency_key: str | None = None) -> Call[FeedbackResult]:
    """Vote the memory not useful (`POST /api/v1/feedback/not-useful`)."""
    return _vote("not-useful", memory_id, reason, agent_id, idempotency_key)


def _vote(verdict: str, memory_id: str, reason: str | None, agent_id: str | None,
          idempotency_key: str | None) -> Call[FeedbackResult]:
    body = fields(memory_id=memory_id, reason=reason, agent_id=agent_id)
    return keyed("POST", f"/api/v1/feedback/{verdict}", FeedbackResult.from_json, body, idempotency_key)


def deprecate(memory_id: str, reason: str, *, expected_version: int | None = None, agent_id: str | None = None,
              idempotency_key: str | None = None) -> Call[MemoryChange]:
    """Mark a memory deprecated (`POST /api/v1/feedback/deprecate`)."""
    body = fields(memory_id=memory_id, reason=reason, expected_version=expected_version, agent_id=agent_id)
    return keyed("POST", "/api/v1/feedback/deprecate", MemoryChange.from_json, body, idempotency_key)


def correct(memory_id: str, content: str, reason: str, *, source: str | None = None, trigger: str | None = None,
            expected_version: int | None = None, agent_id: str | None = None,
            idempotency_key: str | None = None) -> Call[MemoryChange]:
    """Correct a memory: a new version with `content` (`POST /api/v1/feedback/correct`); its
    owner and the owners of its DEPENDS_ON dependants get a `memory.updated` push."""
    body = fields(memory_id=memory_id, content=content, reason=reason, source=source, trigger=trigger,
                  expected_version=expected_version, agent_id=agent_id)
    return keyed("POST", "/api/v1/feedback/correct", MemoryChange.from_json, body, idempotency_key)
