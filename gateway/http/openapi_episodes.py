"""OpenAPI fragments for episodes (L0) and their distillation (merged into
`gateway.http.openapi.openapi_document`)."""

from __future__ import annotations

from typing import Any

from commands.episode_parsing import EPISODE_KINDS, EPISODE_STATUSES, MAX_AT_CHARS, TURN_ROLES
from gateway.http.openapi_eval import _body, _errors, _json, _ref
from gateway.http.openapi_fields import (
    AFTER_HEADER, AFTER_QUERY, AGENT_ACT, AGENT_QUERY, IDEMPOTENCY, LIMITS, NAMESPACE, POSITION, closed, query, text,
)
from projections.episodes.reader import DISTILL_STATUSES

EPISODE_ID = {**text(LIMITS.max_derived_from_chars, blank=False, control=False),
              "description": "client-chosen, opaque, scoped to the namespace (the id memories carry in "
                             "derived_from); generated when absent (from the Idempotency-Key when one is sent)"}
_TURN = closed({
    "role": {"type": "string", "enum": list(TURN_ROLES)},
    "content": {**text(LIMITS.max_episode_bytes, blank=False), "not": {"pattern": "\\x00"}},
    "at": {"type": "string", "maxLength": MAX_AT_CHARS, "description": "ISO 8601 date-time of the turn"}},
    "role", "content")
_EPISODE_FIELDS: dict[str, Any] = {
    "episode_id": EPISODE_ID,
    "namespace": {**NAMESPACE, "description": "default: the agent's main namespace"},
    "kind": {"type": "string", "enum": list(EPISODE_KINDS)},
    "status": {"type": "string", "enum": list(EPISODE_STATUSES), "default": "ok",
               "description": "a task's outcome: skipped and error episodes are not distilled"},
    "turns": {"type": "array", "minItems": 1, "maxItems": LIMITS.max_episode_turns, "items": _TURN},
}
_OUTCOME = {"type": "object", "properties": {
    "episode_id": {"type": "string"}, "namespace": {"type": "string"}, "position": POSITION,
    "duplicate": {"type": "boolean", "description": "already committed with the same body: nothing appended"}}}

SCHEMAS: dict[str, Any] = {
    "Episode": closed({**_EPISODE_FIELDS, "agent_id": AGENT_ACT}, "kind", "turns",
                      description=f"at most {LIMITS.max_episode_bytes} bytes of JSON (else 413)"),
    "EpisodeBatchEntry": closed(_EPISODE_FIELDS, "kind", "turns"),
    "EpisodeBatch": closed({
        "episodes": {"type": "array", "minItems": 1, "maxItems": LIMITS.max_episode_batch,
                     "items": _ref("EpisodeBatchEntry")},
        "agent_id": AGENT_ACT}, "episodes"),
    "EpisodeCommitted": _OUTCOME,
    "EpisodeBatchCommitted": {"type": "object", "properties": {
        "results": {"type": "array", "items": _OUTCOME}, "position": POSITION}},
    "EpisodeView": {"type": "object", "properties": {
        "episode_id": {"type": "string"}, "namespace": {"type": "string"}, "agent_id": {"type": "string"},
        "kind": {"type": "string"}, "status": {"type": "string"},
        "turns": {"type": "array", "items": {"type": "object"}},
        "timestamp": {"type": "string", "description": "when it was committed"},
        "distill_status": {"type": "string", "enum": list(DISTILL_STATUSES)},
        "distilled_to": {"type": "array", "items": {"type": "string"},
                         "description": "the memories distilled from it (their derived_from is this episode)"},
        "extractor": {"type": "string", "description": "rules:v1, or llm:<model>"},
        "reason": {"type": "string", "description": "skipped: the hard rule (task_error, task_skipped, "
                   "no_user_message, chit_chat, knowledge_qa, low_density); completed: why the LLM was not "
                   "the extractor (llm_budget_spent, llm_failed) or remember_this (distilled at once); else ''"},
        "density": {"type": "number", "description": "information density the hard rules measured"},
        "started_at": {"type": ["string", "null"]}, "distilled_at": {"type": ["string", "null"]},
        "position": POSITION}},
}

PATHS: dict[str, Any] = {
    "/api/v1/episodes": {"post": {
        "summary": "Store a raw episode (a conversation or a task log, immutable); it is distilled into memories",
        "parameters": [IDEMPOTENCY], "requestBody": _body("Episode"),
        "responses": {"201": _json(_ref("EpisodeCommitted"), "Committed"),
                      "200": _json(_ref("EpisodeCommitted"), "Already committed with the same body"),
                      **_errors("400", "401", "403", "404", "409", "413", "422")}}},
    "/api/v1/episodes/batch": {"post": {
        "summary": f"Store up to {LIMITS.max_episode_batch} episodes atomically (all validated first)",
        "parameters": [IDEMPOTENCY], "requestBody": _body("EpisodeBatch"),
        "responses": {"201": _json(_ref("EpisodeBatchCommitted"), "Committed"),
                      "200": _json(_ref("EpisodeBatchCommitted"), "Every episode already committed"),
                      **_errors("400", "401", "403", "404", "409", "413", "422")}}},
    "/api/v1/episodes/{episode_id}": {"get": {
        "summary": "One episode, its turns and its distillation status",
        "parameters": [{"name": "episode_id", "in": "path", "required": True, "schema": EPISODE_ID},
                       query("namespace", NAMESPACE, description="default: the agent's main namespace"),
                       AGENT_QUERY, AFTER_QUERY, AFTER_HEADER],
        "responses": {"200": _json(_ref("EpisodeView")), **_errors("400", "401", "403", "404", "504")}}},
}
