"""Memories: commit, batch commit, recall, bootstrap, delete, versions, session close."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ..calls import Call, fields, params, segment
from ..models import BatchCommitResult, CommitResult, MemoryChange, RecallResult, Response, Versions
from ._build import action, get, keyed, post_read


def commit(content: str, *, category: str | None = None, decay_class: str | None = None,
           namespace: str | None = None, tier: str | None = None, kind: str | None = None,
           source: str | None = None, tags: Sequence[str] | None = None, depends_on: Sequence[str] | None = None,
           derived_from: str | None = None, session_id: str | None = None, agent_id: str | None = None,
           idempotency_key: str | None = None) -> Call[CommitResult]:
    """Commit one finished memory (`POST /api/v1/commit`). `category`: fact, decision, preference,
    constraint, pattern; `derived_from`: the episode (conversation, task) it came from; `agent_id`:
    the agent the admin key acts for. Retried safely: a repeat answers the original, `duplicate=True`."""
    body = fields(content=content, category=category, decay_class=decay_class, namespace=namespace, tier=tier,
                  kind=kind, source=source, tags=_list(tags), depends_on=_list(depends_on),
                  derived_from=derived_from, session_id=session_id, agent_id=agent_id)
    return keyed("POST", "/api/v1/commit", CommitResult.from_json, body, idempotency_key)


def batch_commit(entries: Sequence[Mapping[str, Any]], *, agent_id: str | None = None,
                 idempotency_key: str | None = None) -> Call[BatchCommitResult]:
    """Commit up to 1,000 memories at once (`POST /api/v1/batch-commit`), each entry a dict of
    `commit`'s fields; all are validated before anything is appended."""
    body = fields(entries=[dict(e) for e in entries], agent_id=agent_id)
    return keyed("POST", "/api/v1/batch-commit", BatchCommitResult.from_json, body, idempotency_key)


def recall(query: str, *, top_k: int | None = None, namespace: str | None = None,
           include_namespaces: Sequence[str] | None = None, min_score: float | None = None,
           diversity: float | None = None, context: float | None = None, importance_weight: float | None = None,
           cache: bool | None = None, trace_id: str | None = None, agent_id: str | None = None,
           after: str | None = None, method: Literal["POST", "GET"] = "POST") -> Call[RecallResult]:
    """Recall memories by meaning (`POST /api/v1/recall`, or the same as `GET` with `method="GET"`).
    `trace_id` names the decision trace the recall serves (rewarded later with `vprop`)."""
    values: dict[str, Any] = dict(query=query, top_k=top_k, namespace=namespace,
                                  include_namespaces=_list(include_namespaces), min_score=min_score,
                                  diversity=diversity, context=context, importance_weight=importance_weight,
                                  cache=cache, trace_id=trace_id, agent_id=agent_id)
    if method == "GET":
        return get("/api/v1/recall", RecallResult.from_json, params(**values), after=after)
    return post_read("/api/v1/recall", RecallResult.from_json, fields(**values), after=after)


def bootstrap(*, limit: int | None = None, agent_id: str | None = None,
              after: str | None = None) -> Call[RecallResult]:
    """About ten core facts for a cold-starting agent (`GET /api/v1/bootstrap`)."""
    return get("/api/v1/bootstrap", RecallResult.from_json, params(limit=limit, agent_id=agent_id), after=after)


def delete_memory(memory_id: str, *, expected_version: int | None = None, reason: str | None = None,
                  agent_id: str | None = None, idempotency_key: str | None = None) -> Call[MemoryChange]:
    """Soft-delete a memory (`DELETE /api/v1/distilled/{id}`); a stale `expected_version` raises
    `VersionConflict`."""
    body = fields(expected_version=expected_version, reason=reason, agent_id=agent_id)
    return keyed("DELETE", f"/api/v1/distilled/{segment(memory_id)}", MemoryChange.from_json, body,
                 idempotency_key)


def versions(memory_id: str, *, agent_id: str | None = None, after: str | None = None) -> Call[Versions]:
    """A memory now and its version history (`GET /api/v1/memory/{id}/versions`)."""
    return get(f"/api/v1/memory/{segment(memory_id)}/versions", Versions.from_json, params(agent_id=agent_id),
               after=after)


def close_session(session_id: str, *, agent_id: str | None = None) -> Call[Response]:
    """Forget the ephemeral memories committed with `session_id` (`POST /api/v1/sessions/{id}/close`):
    `{session_id, namespace, forgotten, count, position}`."""
    return action(f"/api/v1/sessions/{segment(session_id)}/close", Response.from_json, fields(agent_id=agent_id))


def _list(values: Sequence[str] | None) -> list[str] | None:
    if isinstance(values, str):
        raise TypeError("expected a list of strings, not one string")
    return list(values) if values is not None else None
