"""OpenAPI fragments for conflicts and merges (merged into `gateway.http.openapi.openapi_document`)."""

from __future__ import annotations

from typing import Any

from commands.conflicts.resolution import STRATEGIES
from gateway.http.handlers.conflicts import CONFLICT_ID_CHARS, DEFAULT_LIMIT, MAX_OFFSET
from gateway.http.openapi_eval import _body, _errors, _json, _ref
from gateway.http.openapi_fields import (
    AFTER, AFTER_HEADER, AFTER_QUERY, AGENT_ACT, AGENT_QUERY, MEMORY_ID, NAMESPACE, POSITION, closed, query, query_int,
    text,
)
from projections.conflicts.reader import MAX_LIMIT, STATUSES

CONFLICT_ENTRY = {"type": "object", "description": "a contradiction found when the memory was committed", "properties": {
    "conflict_id": {"type": "string"}, "memory_id": {"type": "string", "description": "the stored memory it contradicts"},
    "kind": {"type": "string", "enum": ["entity", "negation", "importance"]},
    "confidence": {"type": "number"}}}

SCHEMAS: dict[str, Any] = {
    "Conflict": {"type": "object", "properties": {
        "conflict_id": {"type": "string"}, "kind": {"type": "string", "enum": ["entity", "negation", "importance"]},
        "confidence": {"type": "number"}, "status": {"type": "string", "enum": ["open", "resolved"]},
        "memory_ids": {"type": "array", "items": {"type": "string"},
                       "description": "[the memory committed last, the stored one it contradicts]"},
        "namespaces": {"type": "array", "items": {"type": "string"}},
        "memories": {"type": "array", "description": "the two memories as they are now (in memory_ids order)",
                     "items": {"type": "object", "properties": {
                         "memory_id": {"type": "string"}, "content": {"type": "string"},
                         "namespace": {"type": "string"}, "source": {"type": "string"},
                         "agent_id": {"type": "string"}, "tier": {"type": "string"}, "timestamp": {"type": "string"},
                         "status": {"type": "string"}, "is_deleted": {"type": "boolean"},
                         "missing": {"type": "boolean"}}}},
        "evidence": {"type": "string", "description": "what differed (the values, or a negation)"},
        "detected_at": {"type": "string", "format": "date-time"}, "detected_by": {"type": "string"},
        "position": POSITION,
        "resolution": {"type": ["object", "null"], "properties": {
            "strategy": {"type": "string"}, "rule": {"type": "string"}, "winner": {"type": "string"},
            "loser": {"type": "string"}, "resolved_at": {"type": "string"}, "resolved_by": {"type": "string"}}}}},
    "ConflictsResponse": {"type": "object", "properties": {
        "conflicts": {"type": "array", "items": _ref("Conflict"), "description": "newest first"},
        "count": {"type": "integer"}, "position": {"type": ["string", "null"]}}},
    "ResolveRequest": closed({
        "conflict_id": text(CONFLICT_ID_CHARS, blank=False),
        "strategy": {"type": "string", "enum": list(STRATEGIES)},
        "winner": {**MEMORY_ID, "description": "ask_user only: the memory the person chose"},
        "after": AFTER, "agent_id": AGENT_ACT}, "conflict_id", "strategy"),
    "ResolveResponse": {"type": "object", "properties": {
        "conflict_id": {"type": "string"}, "strategy": {"type": "string"}, "winner": {"type": "string"},
        "loser": {"type": "string", "description": "deprecated (reason conflict:<id>), or merged for auto_merge; "
                                                   "'' for keep_both"},
        "position": POSITION}},
    "UnmergeRequest": closed({"memory_id": MEMORY_ID}, "memory_id"),
    "UnmergeResponse": {"type": "object", "properties": {
        "memory_id": {"type": "string"}, "merged_into": {"type": "string"}, "version": {"type": "integer"},
        "position": POSITION}},
}

PATHS: dict[str, Any] = {
    "/api/v1/conflicts": {"get": {
        "summary": "Conflicts whose two memories are in your scope (own namespaces and shared, or `namespace`)",
        "parameters": [query("status", {"type": "string", "enum": list(STATUSES), "default": "open"}),
                       query("namespace", NAMESPACE), query_int("limit", 1, MAX_LIMIT, DEFAULT_LIMIT),
                       query_int("offset", 0, MAX_OFFSET, 0), AGENT_QUERY, AFTER_QUERY, AFTER_HEADER],
        "responses": {"200": _json(_ref("ConflictsResponse")), **_errors("400", "401", "403", "404", "504")}}},
    "/api/v1/conflicts/resolve": {"post": {
        "summary": "Settle a conflict: ask_user (with winner), latest_wins, primary_wins, keep_both or auto_merge; "
                   "needs write access to the loser",
        "requestBody": _body("ResolveRequest"),
        "responses": {"200": _json(_ref("ResolveResponse")),
                      **_errors("400", "401", "403", "404", "409", "413", "504")}}},
    "/api/v1/admin/unmerge": {"post": {
        "summary": "Undo a merge (admin): the merged memory is live on its own again, its tombstone restored",
        "requestBody": _body("UnmergeRequest"),
        "responses": {"200": _json(_ref("UnmergeResponse")), **_errors("400", "401", "403", "404", "409", "413")}}},
}
