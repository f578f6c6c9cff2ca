"""OpenAPI fragments for feedback, corrections, the versions endpoint, forget runs and tombstones
(merged into `gateway.http.openapi.openapi_document`)."""

from __future__ import annotations

from typing import Any

from gateway.http.handlers.admin import MAX_CAPACITY
from gateway.http.handlers.tombstones import DEFAULT_LIMIT, MAX_OFFSET
from gateway.http.openapi_eval import _body, _errors, _json, _ref
from gateway.http.openapi_fields import (
    IDEMPOTENCY, AFTER_HEADER, AFTER_QUERY, AGENT_ACT, AGENT_QUERY, BOOLEAN, CONTENT, LIMITS, MEMORY_ID, NAMESPACE, POSITION,
    VERSION, closed, query, query_int, text,
)
from projections.tombstones.reader import MAX_LIMIT as MAX_TOMBSTONES

_MEMORY_ID = MEMORY_ID
_AGENT = AGENT_ACT
_REASON = text(LIMITS.max_reason_chars)
_REASON_REQUIRED = text(LIMITS.max_reason_chars, blank=False)

SCHEMAS: dict[str, Any] = {
    "FeedbackRequest": closed({"memory_id": _MEMORY_ID, "reason": _REASON, "agent_id": _AGENT}, "memory_id"),
    "FeedbackResponse": {"type": "object", "properties": {
        "memory_id": {"type": "string"}, "verdict": {"type": "string", "enum": ["useful", "not_useful"]},
        "position": POSITION}},
    "DeprecateRequest": closed({"memory_id": _MEMORY_ID, "reason": _REASON_REQUIRED, "expected_version": VERSION,
                                "agent_id": _AGENT}, "memory_id", "reason"),
    "CorrectRequest": closed({
        "memory_id": _MEMORY_ID, "content": CONTENT, "reason": _REASON_REQUIRED,
        "source": text(LIMITS.max_source_chars, description="where the correction comes from (seed 3.3.3 trust "
                                                            "weights)"),
        "trigger": text(200, description="what made it change"),
        "expected_version": {**VERSION, "description": "stale -> 409 version_conflict"},
        "agent_id": _AGENT}, "memory_id", "content", "reason"),
    "VersionedResponse": {"type": "object", "properties": {
        "memory_id": {"type": "string"}, "version": {"type": "integer"}, "position": POSITION}},
    "VersionsResponse": {"type": "object", "properties": {
        "memory_id": {"type": "string"}, "namespace": {"type": "string"}, "version": {"type": "integer"},
        "content": {"type": "string"}, "status": {"type": "string", "enum": ["active", "deprecated"]},
        "is_deleted": {"type": "boolean"}, "volatile": {"type": "boolean", "description": ">= 3 corrections"},
        "useful_count": {"type": "integer"}, "not_useful_count": {"type": "integer"},
        "recall_count": {"type": "integer"}, "last_recalled_at": {"type": "string"},
        "quality_score": {"type": "number"},
        "quality_notice_at": {"type": "string", "description": "when the open quality notice was raised, or ''"},
        "importance_factor": {"type": "number", "description": "stored: 0.5 while quality is low, 0.1 after "
                              "the 180-day stale rule"},
        "importance": {"type": "number", "description": "now: factor x recency x (1 + ln(1 + recall_count))"},
        "decay": {"type": "number", "description": "linear decay by decay_class now (core: 1.0)"},
        "freshness": {"type": "string", "enum": ["fresh", "stale", "verified"]},
        "confidence": {"type": "number"}, "tier": {"type": "string"}, "decay_class": {"type": "string"},
        "source": {"type": "string"}, "updated_at": {"type": "string"},
        "derived_from": {"type": "string", "description": "the episode id it was committed with, or ''"},
        "category": {"type": "string"}, "kind": {"type": "string", "enum": ["L1", "L2", "L3"],
                                                 "description": "L2: a pattern mined by deep consolidation"},
        "extractor": {"type": "string", "description": "what wrote it: '' for an agent's commit, a distillation "
                                                       "extractor, or consolidation:patterns"},
        "versions": {"type": "array", "items": {"type": "object", "properties": {
            "version": {"type": "integer"}, "content": {"type": "string"}, "updated_by": {"type": "string"},
            "source": {"type": "string"}, "trigger": {"type": "string"}, "reason": {"type": "string"},
            "timestamp": {"type": "string"}}}}}},
}

SCHEMAS["ForgetRequest"] = closed({
    "capacity": {"type": "integer", "minimum": 1, "maximum": MAX_CAPACITY,
                 "description": "live memories per namespace (default ZHIYI_FORGET_CAPACITY, 10000)"},
    "namespace": {**NAMESPACE, "description": "only this namespace"},
    "dry_run": {**BOOLEAN, "default": False, "description": "answer the plan, append nothing"}})
SCHEMAS["ForgetResponse"] = {"type": "object", "properties": {
    "forgotten": {"type": "array", "items": {"type": "object", "properties": {
        "memory_id": {"type": "string"}, "namespace": {"type": "string"},
        "reason": {"type": "string", "enum": ["quality_low", "deprecated", "lru"]}}}},
    "count": {"type": "integer"}, "capacity": {"type": "integer"}, "dry_run": {"type": "boolean"},
    "position": {"type": "string", "description": "of the last memory.forgotten ('' when none)"}}}
SCHEMAS["TickRequest"] = closed({
    "capacity": {"type": "integer", "minimum": 1, "maximum": MAX_CAPACITY,
                 "description": "for the forget run (default ZHIYI_FORGET_CAPACITY)"},
    "dry_run": {**BOOLEAN, "default": False, "description": "answer what would be decided, append nothing"}})
_DUE = {"type": "array", "items": {"type": "object", "properties": {
    "memory_id": {"type": "string"}, "namespace": {"type": "string"}, "reason": {"type": "string"}}}}
SCHEMAS["TickResponse"] = {"type": "object", "properties": {
    "now": {"type": "string", "format": "date-time", "description": "the scheduler clock's now"},
    "deprecated": {**_DUE, "description": "quality deadline: still low 7 days after the notice"},
    "downweighted": {**_DUE, "description": "stale and not recalled for 180 days: importance factor 0.1"},
    "forgotten": {"type": "array", "description": "the forget run, then ephemeral memories older than "
                                                 "ZHIYI_EPHEMERAL_TTL_S", "items": {"type": "object", "properties": {
        "memory_id": {"type": "string"}, "namespace": {"type": "string"},
        "reason": {"type": "string", "enum": ["quality_low", "deprecated", "lru", "ephemeral_expired"]}}}},
    "pruned": {"type": "object", "description": "graph maintenance (seed 2.5.5): node and edge ids", "properties": {
        "removed_nodes": {"type": "array", "items": {"type": "string"}},
        "removed_edges": {"type": "array", "items": {"type": "string"}},
        "archived_edges": {"type": "array", "items": {"type": "string"}},
        "merged_edges": {"type": "array", "items": {"type": "array", "items": {"type": "string"}},
                         "description": "[removed edge, kept edge] pairs"}}},
    "capacity": {"type": "integer"}, "dry_run": {"type": "boolean"},
    "position": {"type": "string", "description": "of the last event appended ('' when none)"}}}
SCHEMAS["Tombstone"] = {"type": "object", "properties": {
    "id": {"type": "string", "description": "uuid5 of original_id: one tombstone per memory (the first eviction, or "
                                           "its merge; a restored merge's row is replaced by a later one)"},
    "original_id": {"type": "string", "description": "the evicted memory"},
    "content_snapshot": {"type": "string", "description": "its content at eviction"},
    "namespace": {"type": "string"},
    "reason": {"type": "string", "enum": ["quality_low", "deprecated", "lru", "merged", "session_closed", "ephemeral_expired"]},
    "merged_into": {"type": "string", "description": "the target memory when merged, else ''"},
    "deleted_at": {"type": "string", "format": "date-time",
                   "description": "time of the memory.forgotten (or memory.merged) event"},
    "version": {"type": "integer", "description": "the memory's version the eviction, merge or unmerge made"},
    "position": POSITION,
    "restored_at": {"type": "string", "description": "time of the memory.unmerged that undid the merge, else ''"}}}
SCHEMAS["TombstonesResponse"] = {"type": "object", "properties": {
    "tombstones": {"type": "array", "items": _ref("Tombstone"), "description": "newest first (deleted_at, id)"},
    "count": {"type": "integer", "description": "tombstones matching the filters in all (before limit/offset)"},
    "position": {"type": ["string", "null"], "description": "the tombstones projection's checkpoint"}}}

_TOMBSTONE_QUERY = [
    query("namespace", NAMESPACE), query("memory_id", _MEMORY_ID, description="the evicted memory's id"),
    query("reason", {"type": "string", "enum": ["quality_low", "deprecated", "lru", "merged", "session_closed", "ephemeral_expired"]}),
    query_int("limit", 1, MAX_TOMBSTONES, DEFAULT_LIMIT), query_int("offset", 0, MAX_OFFSET, 0),
    AFTER_QUERY, AFTER_HEADER]

PATHS: dict[str, Any] = {
    "/api/v1/admin/tick": {"post": {
        "summary": "Scheduler run now (admin): 7-day quality deadline, 180-day stale rule, forget run, graph prune",
        "requestBody": _body("TickRequest", required=False),
        "responses": {"200": _json(_ref("TickResponse")), **_errors("400", "401", "403", "409", "413", "504")}}},
    "/api/v1/admin/tombstones": {"get": {
        "summary": "Tombstones (admin): memories evicted by forget runs, with their content at eviction",
        "parameters": _TOMBSTONE_QUERY,
        "responses": {"200": _json(_ref("TombstonesResponse")), **_errors("400", "401", "403", "504")}}},
    "/api/v1/admin/forget": {"post": {
        "summary": "Forget run (admin): quality_low, deprecated, then LRU above the per-namespace capacity",
        "requestBody": _body("ForgetRequest", required=False),
        "responses": {"200": _json(_ref("ForgetResponse")), **_errors("400", "401", "403", "409", "413", "504")}}},
    "/api/v1/feedback/useful": {"post": {
        "summary": "The memory helped (counted; the version stays)", "parameters": [IDEMPOTENCY], "requestBody": _body("FeedbackRequest"),
        "responses": {"201": _json(_ref("FeedbackResponse"), "Recorded"), **_errors("400", "401", "403", "404", "413", "422")}}},
    "/api/v1/feedback/not-useful": {"post": {
        "summary": "The memory did not help (counted, with an optional reason)", "parameters": [IDEMPOTENCY], "requestBody": _body("FeedbackRequest"),
        "responses": {"201": _json(_ref("FeedbackResponse"), "Recorded"), **_errors("400", "401", "403", "404", "413", "422")}}},
    "/api/v1/feedback/deprecate": {"post": {
        "summary": "Mark a memory outdated (a new version; the next forget run moves it to the tombstones)",
        "parameters": [IDEMPOTENCY], "requestBody": _body("DeprecateRequest"),
        "responses": {"200": _json(_ref("VersionedResponse")), **_errors("400", "401", "403", "404", "409", "413", "422")}}},
    "/api/v1/feedback/correct": {"post": {
        "summary": "Correct a memory's content: a new version with reason, source and trigger",
        "parameters": [IDEMPOTENCY], "requestBody": _body("CorrectRequest"),
        "responses": {"200": _json(_ref("VersionedResponse")), **_errors("400", "401", "403", "404", "409", "413", "422")}}},
    "/api/v1/memory/{memory_id}/versions": {"get": {
        "summary": "The provenance chain of a memory: every version, oldest first",
        "parameters": [{"name": "memory_id", "in": "path", "required": True, "schema": _MEMORY_ID},
                       AFTER_QUERY, AGENT_QUERY, AFTER_HEADER],
        "responses": {"200": _json(_ref("VersionsResponse")), **_errors("400", "401", "403", "404", "504")}}},
}
