"""The OpenAPI 3.1 document served at GET /api/v1/openapi.json."""

from __future__ import annotations

from typing import Any

from events.vocabulary import CATEGORIES, DECAY_CLASSES, KINDS, TIERS
from gateway.http import openapi_eval
from gateway.http import openapi_episodes, openapi_feedback
from gateway.http import (openapi_backups, openapi_conflicts, openapi_graph, openapi_learning, openapi_metrics,
                          openapi_push, openapi_replicas, openapi_triggers)
from gateway.http.openapi_fields import (
    AFTER, AFTER_HEADER, AFTER_QUERY, AGENT_ACT, AGENT_QUERY, BOOLEAN, CONTENT, IDEMPOTENCY, LIMITS, MEMORY_ID,
    NAMESPACE, NAMESPACES, NAMESPACES_CSV, NEW_AGENT_ID, POSITION, TAGS, TRACE_ID, VERSION, closed, query, query_int,
    text,
)


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


_AGENT_PATH = {"name": "agent_id", "in": "path", "required": True, "schema": {"type": "string"}}


def _json(schema: dict, description: str = "") -> dict:
    return {"description": description or "OK", "content": {"application/json": {"schema": schema}}}


ERRORS = {code: {"$ref": f"#/components/responses/{name}"} for code, name in (
    ("400", "BadRequest"), ("401", "Unauthorized"), ("403", "Forbidden"), ("404", "NotFound"),
    ("409", "Conflict"), ("413", "TooLarge"), ("422", "Unprocessable"), ("503", "Unavailable"),
    ("429", "RateLimited"), ("504", "ProjectionLag"))}


def _errors(*codes: str) -> dict:
    """The error answers of an operation: the listed ones plus 400 (unknown_field is possible
    everywhere), 429 (an agent over its quota) and 503 (the log unreachable, reset, or a write's outcome
    unknown); a read that waits
    for `after` (504) also refuses a position beyond the log's end (422)."""
    extra = {"422"} if "504" in codes else set()
    return {c: ERRORS[c] for c in sorted({"400", "429", "503", *extra, *codes})}


SCHEMAS: dict[str, Any] = {
    "Error": {"type": "object", "required": ["error"], "properties": {"error": {
        "type": "object", "required": ["code", "message", "details"],
        "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "details": {"type": "object"}}}}},
    "RegisterRequest": closed({
        "agent_id": NEW_AGENT_ID, "agent_type": text(64, default="generic"),
        "namespace": {**NAMESPACE, "description": "main namespace (default <agent_id>-main)"}}, "agent_id"),
    "RegisterResponse": {"type": "object", "properties": {
        "agent_id": {"type": "string"}, "api_key": {"type": "string", "description": "shown once; stored hashed"},
        "namespaces": {"type": "array", "items": {"type": "string"}}, "position": POSITION,
        "ws_endpoint": {"type": "string", "description": "the agent's push socket, a path on this server "
                                                         "(GET with a WebSocket upgrade)"},
        "rate_limits": {"type": ["object", "null"], "description": "the agent's quotas, {read: {rate, burst}, "
                                                                  "write: {rate, burst}} (null: limits off)"}}},
    "SessionClose": {"type": "object", "properties": {"agent_id": {"type": "string"}},
                     "additionalProperties": False},
    "SessionClosed": {"type": "object", "properties": {
        "session_id": {"type": "string"}, "namespace": {"type": "string"},
        "forgotten": {"type": "array", "items": {"type": "string"}}, "count": {"type": "integer"},
        "position": {"type": "string", "description": "of the last memory.forgotten ('' when none)"}}},
    "AuditPage": {"type": "object", "properties": {
        "events": {"type": "array", "items": {"type": "object", "properties": {
            "position": POSITION, "type": {"type": "string"}, "v": {"type": "integer"}, "ns": {"type": "string"},
            "agent": {"type": "string"}, "by": {"type": "string"}, "origin": {"type": "string"},
            "cause": {"type": "string"}, "hlc": {"type": "string"}, "at": {"type": ["string", "null"]},
            "data": {"type": "object"}}}},
        "next": {"type": ["string", "null"], "description": "the cursor of the next page; null: the end"}}},
    "KeyRotated": {"type": "object", "properties": {
        "agent_id": {"type": "string"}, "api_key": {"type": "string", "description": "shown once; stored hashed"},
        "namespaces": {"type": "array", "items": {"type": "string"}}, "position": POSITION}},
    "KeyRevoked": {"type": "object", "properties": {
        "agent_id": {"type": "string"}, "revoked": {"type": "boolean"}, "position": POSITION}},
    "MemoryFields": {
        "content": CONTENT,
        "category": {"type": "string", "enum": list(CATEGORIES), "default": "fact"},
        "decay_class": {"type": "string", "enum": list(DECAY_CLASSES),
                        "description": "defaulted from category when absent"},
        "namespace": {**NAMESPACE, "description": "own main/ephemeral namespace or shared; default own main"},
        "tier": {"type": "string", "enum": list(TIERS), "default": "normal"},
        "kind": {"type": "string", "enum": list(KINDS), "default": "L1"},
        "source": text(LIMITS.max_source_chars, default="agent_inference"),
        "tags": TAGS,
        "depends_on": {"type": "array", "items": MEMORY_ID, "maxItems": LIMITS.max_depends_on,
                       "description": "ids of stored memories (an unknown one: 404 unknown_dependency)"},
        "derived_from": {**text(LIMITS.max_derived_from_chars, blank=False, control=False),
                         "description": "the episode the memory came from: your id of the conversation, "
                                        "session or task (opaque, scoped to the memory's namespace; it need "
                                        "not exist anywhere else). Send the same id with every memory of one "
                                        "episode: recall's context neighbours follow it, and the graph links "
                                        "the memory to the node episode:<namespace>:<id> (DERIVED_FROM)"},
        "session_id": {**text(128, blank=False, control=False),
                       "description": "only for commits into the agent's -ephemeral namespace: closing the session "
                                      "(POST /api/v1/sessions/{session_id}/close) forgets its memories"}},
    "CommitResponse": {"type": "object", "properties": {
        "memory_id": {"type": "string"}, "namespace": {"type": "string"}, "version": {"type": "integer"},
        "position": POSITION, "duplicate": {"type": "boolean"},
        "conflicts": {"type": "array", "items": openapi_conflicts.CONFLICT_ENTRY,
                      "description": "stored memories (own namespace and shared) this one contradicts"}}},
    "BatchRequest": closed({
        "entries": {"type": "array", "minItems": 1, "maxItems": LIMITS.max_batch, "items": _ref("BatchEntry")},
        "agent_id": AGENT_ACT}, "entries"),
    "BatchResponse": {"type": "object", "properties": {
        "results": {"type": "array", "items": {"type": "object", "properties": {
            "memory_id": {"type": "string"}, "position": POSITION,
            "conflicts": {"type": "array", "items": openapi_conflicts.CONFLICT_ENTRY}}}},
        "position": POSITION, "duplicate": {"type": "boolean"}}},
    "RecallRequest": closed({
        "query": text(LIMITS.max_query_chars, blank=False),
        "top_k": {"type": "integer", "minimum": 1, "maximum": LIMITS.max_top_k, "default": 10},
        "namespace": {**NAMESPACE, "description": "narrow to one readable namespace"},
        "include_namespaces": {**NAMESPACES, "description": "add other agents' -main namespaces (opt-in)"},
        "min_score": {"type": "number", "minimum": -1, "maximum": 1,
                      "description": "drop results whose score is below this"},
        "diversity": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5,
                      "description": "MMR: 0 = relevance order, 1 = maximum diversity; only near-duplicates "
                                     "(cosine above 0.75) count as redundant"},
        "context": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.6,
                    "description": "weight of context neighbours (the memories of the same episode, "
                                   "derived_from, in commit order; without one, the same agent's adjacent "
                                   "commits once they are evidently one conversation) in the lexical score; "
                                   "0 = off"},
        "importance_weight": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.2,
                              "description": "weight of each memory's standing (importance, quality) in its "
                                             "score: relevance x (1 + w x (standing - 0.5)); 0 = relevance only"},
        "cache": {"type": "boolean", "default": True, "description": "use the search cache (TTL 1 h)"},
        "trace_id": TRACE_ID, "after": AFTER, "agent_id": AGENT_ACT}, "query"),
    "RecallResult": {"type": "object", "properties": {
        "memory_id": {"type": "string"}, "content": {"type": "string"}, "score": {"type": "number"},
        "namespace": {"type": "string"}, "category": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}}, "source": {"type": "string"},
        "version": {"type": "integer"}, "timestamp": {"type": "string", "format": "date-time"},
        "freshness": {"type": "string", "enum": ["fresh", "stale", "verified"]},
        "similarity": {"type": "number", "description": "cosine between the query and the memory"},
        "fallback": {"type": "string", "enum": ["shared"],
                     "description": "added by the shared fallback (score counted half)"},
        "importance": {"type": "number", "description": "factor x recency (half-life 90 d) x (1 + ln(1 + recalls))"},
        "quality_score": {"type": "number", "description": "useful / (useful + not useful); 0.5 without feedback"},
        "confidence": {"type": "number", "description": "source trust + PassiveValidator confirmations, <= 1"},
        "expansion": {"type": "string", "enum": ["graph"],
                      "description": "added by graph expansion (fewer than 5 results passed)"},
        "via": {"type": "string", "description": "the hit an expansion came from, and the relation"},
        "warnings": {"type": "array", "items": {"type": "string"},
                     "description": "stale, volatile, low_quality or deprecated memory notes"}}},
    "RecallResponse": {"type": "object", "properties": {
        "results": {"type": "array", "items": _ref("RecallResult")},
        "namespaces": {"type": "array", "items": {"type": "string"}},
        "position": POSITION, "took_ms": {"type": "number"}, "cached": {"type": "boolean"},
        "prefetch": {"type": "array", "description": "CO_OCCURS partners (weight > 0.6) of the top 3 results",
                     "items": {"type": "object", "properties": {
                         "memory_id": {"type": "string"}, "content": {"type": "string"},
                         "namespace": {"type": "string"}, "weight": {"type": "number"},
                         "with": {"type": "string", "description": "the result it co-occurs with"}}}}}},
    "BootstrapResponse": {"type": "object", "properties": {
        "results": {"type": "array", "items": {"type": "object", "properties": {
            "memory_id": {"type": "string"}, "content": {"type": "string"}, "namespace": {"type": "string"},
            "category": {"type": "string"}, "tier": {"type": "string"}, "importance": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}}, "source": {"type": "string"},
            "version": {"type": "integer"}, "timestamp": {"type": "string"}, "freshness": {"type": "string"}}}},
        "namespaces": {"type": "array", "items": {"type": "string"}}, "position": POSITION,
        "ws_endpoint": {"type": "string", "description": "the agent's push socket, a path on this server "
                                                         "(GET with a WebSocket upgrade)"},
        "rate_limits": {"type": ["object", "null"], "description": "the agent's quotas, {read: {rate, burst}, "
                                                                  "write: {rate, burst}} (null: limits off)"}}},
    "DeleteResponse": {"type": "object", "properties": {
        "memory_id": {"type": "string"}, "version": {"type": "integer"}, "position": POSITION}},
    "Health": {"type": "object", "properties": {
        "status": {"type": "string", "enum": ["ok", "degraded", "log_reset"]}, "redis": {"type": "boolean"},
        "log": {"type": "object"}, "projections": {"type": "object"}, "projectors": {"type": "object"},
        "role": {"type": "string", "enum": ["primary"]}, "instance_id": {"type": "string"},
        "primary": {"type": ["string", "null"], "description": "a replica's primary (none on a primary)"},
        "link": {"type": ["string", "null"], "description": "a replica's link to its primary (none on a primary)"},
        "serving_index": {"type": ["object", "null"], "description": "ready: recalls are served from memory (false "
                          "while the index loads: LanceDB serves them, slower); position: the memories checkpoint "
                          "it reflects", "properties": {"ready": {"type": "boolean"},
                                                        "position": {"type": ["string", "null"]}}},
        "lag_ms": {"type": ["integer", "null"], "description": "the slowest projection's lag in stream time"},
        "lag_events": {"type": ["integer", "null"],
                       "description": "events after the slowest projection's checkpoint (counted up to 10,000)"}}},
    "Stats": {"type": "object", "properties": {
        "memories": {"type": "object"}, "events": {"type": "object"}, "projectors": {"type": "object"},
        "queues": {"type": "object", "description": "the admin key only: distill_queue (episodes waiting for "
                                                    "their extractor), episodes (by distill_status), "
                                                    "conflicts_open, reactions_dead_letters", "properties": {
            "distill_queue": {"type": "integer"}, "episodes": {"type": "object"},
            "conflicts_open": {"type": "integer"}, "reactions_dead_letters": {"type": "integer"}}}}},
}


def _error_response(description: str) -> dict:
    return _json(_ref("Error"), description)


MEMORY = SCHEMAS.pop("MemoryFields")
SCHEMAS["Memory"] = closed({**MEMORY, "agent_id": AGENT_ACT}, "content")
SCHEMAS["BatchEntry"] = closed(MEMORY, "content")   # entries act as the batch's agent
SCHEMAS["DeleteRequest"] = closed({"expected_version": {**VERSION, "description": "stale -> 409 version_conflict"},
                                   "reason": text(LIMITS.max_reason_chars), "agent_id": AGENT_ACT})


def openapi_document() -> dict:
    recall_params = [
        query("query", text(LIMITS.max_query_chars, blank=False), required=True),
        query_int("top_k", 1, LIMITS.max_top_k, 10),
        query("namespace", NAMESPACE), query("include_namespaces", NAMESPACES_CSV),
        query("min_score", {"type": "number", "minimum": -1, "maximum": 1}),
        *(query(name, {"type": "number", "minimum": 0, "maximum": 1})
          for name in ("diversity", "context", "importance_weight")),
        query("cache", BOOLEAN), query("trace_id", TRACE_ID), AFTER_QUERY, AGENT_QUERY, AFTER_HEADER,
    ]
    return {
        "openapi": "3.1.0",
        "info": {"title": "zhiyi (织忆, MemoryWeave)", "version": "0.1.0",
                 "description": "Shared, event-sourced memory for LLM agents. Every write returns a `position`; "
                                "reads accept `after=<position>` to see their own writes."},
        "servers": [{"url": "http://127.0.0.1:7821"}],
        "security": [{"ApiKey": []}],
        "paths": {
            "/health": {"get": {"summary": "Health: Redis reachability, projector positions and lag",
                                "security": [], "responses": {
                                    "200": _json(_ref("Health")), **_errors(),
                                    "503": _error_response("Redis unreachable (unavailable) or the log was reset "
                                                           "(log_reset); the health document is in details")}}},
            "/api/v1/openapi.json": {"get": {"summary": "This document", "security": [],
                                             "responses": {"200": {"description": "OpenAPI document"},
                                                           **_errors()}}},
            "/api/v1/agents/register": {"post": {
                "summary": "Register an agent (admin key); its API key works at once", "parameters": [IDEMPOTENCY],
                "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("RegisterRequest")}}},
                "responses": {"201": _json(_ref("RegisterResponse"), "Registered"),
                              **_errors("400", "401", "403", "409", "413", "422")}}},
            "/api/v1/agents/{agent_id}/rotate-key": {"post": {
                "summary": "A new key for the agent (the admin key, or the agent's own); the old one is refused at "
                           "once", "parameters": [_AGENT_PATH, IDEMPOTENCY],
                "requestBody": {"required": False, "content": {"application/json": {"schema": _ref("EmptyRequest")}}},
                "responses": {"200": _json(_ref("KeyRotated")), **_errors("401", "403", "404", "409", "422")}}},
            "/api/v1/agents/{agent_id}/revoke": {"post": {
                "summary": "Withdraw the agent's key (the admin key, or the agent's own): no key works for it until "
                           "one is rotated in", "parameters": [_AGENT_PATH],
                "requestBody": {"required": False, "content": {"application/json": {"schema": _ref("EmptyRequest")}}},
                "responses": {"200": _json(_ref("KeyRevoked")), **_errors("401", "403", "404", "409")}}},
            "/api/v1/sessions/{session_id}/close": {"post": {
                "summary": "Forget the agent's ephemeral memories committed under this session (reason "
                           "session_closed)", "parameters": [{"name": "session_id", "in": "path", "required": True,
                                                              "schema": {"type": "string", "maxLength": 128}}],
                "requestBody": {"required": False, "content": {"application/json": {"schema": _ref("SessionClose")}}},
                "responses": {"200": _json(_ref("SessionClosed")), **_errors("401", "403", "404", "504")}}},
            "/api/v1/admin/audit": {"get": {
                "summary": "Who did what (admin): the log's events, oldest first, a page at a time",
                "parameters": [
                    query("type", {"type": "string"}, description="event types or prefixes (memory.*), comma-separated"),
                    query("namespace", {"type": "string"}, description="comma-separated"),
                    query("agent_id", {"type": "string"}, description="the acting agents, comma-separated"),
                    query("since", {"type": "string"}, description="ISO 8601, or 15m / 2h / 7d ago"),
                    query("until", {"type": "string"}, description="ISO 8601, or 15m / 2h / 7d ago"),
                    query("cursor", POSITION, description="the `next` of the previous page"),
                    query_int("limit", 1, 1000, 100)],
                "responses": {"200": _json(_ref("AuditPage")), **_errors("401", "403")}}},
            "/api/v1/commit": {"post": {
                "summary": "Store a finished memory", "parameters": [IDEMPOTENCY],
                "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("Memory")}}},
                "responses": {"201": _json(_ref("CommitResponse"), "Committed"),
                              "200": _json(_ref("CommitResponse"), "Idempotent repeat"),
                              **_errors("400", "401", "403", "404", "413", "422")}}},
            "/api/v1/batch-commit": {"post": {
                "summary": "Store up to 1000 memories atomically (all validated before any is appended)",
                "parameters": [IDEMPOTENCY],
                "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("BatchRequest")}}},
                "responses": {"201": _json(_ref("BatchResponse"), "Committed"),
                              "200": _json(_ref("BatchResponse"), "Idempotent repeat"),
                              **_errors("400", "401", "403", "404", "413", "422")}}},
            "/api/v1/recall": {
                "post": {"summary": "Recall memories by meaning",
                         "parameters": [AFTER_QUERY, AFTER_HEADER],
                         "requestBody": {"required": True,
                                         "content": {"application/json": {"schema": _ref("RecallRequest")}}},
                         "responses": {"200": _json(_ref("RecallResponse")),
                                       **_errors("400", "401", "403", "404", "413", "504")}},
                "get": {"summary": "Recall memories by meaning (query parameters)", "parameters": recall_params,
                        "responses": {"200": _json(_ref("RecallResponse")),
                                      **_errors("400", "401", "403", "404", "504")}}},
            "/api/v1/bootstrap": {"get": {
                "summary": "About ten core facts for a cold-starting agent (tier=core first, then importance)",
                "parameters": [query_int("limit", 1, 50, 10), AGENT_QUERY, AFTER_QUERY, AFTER_HEADER],
                "responses": {"200": _json(_ref("BootstrapResponse")), **_errors("400", "401", "403", "404", "504")}}},
            "/api/v1/distilled/{memory_id}": {"delete": {
                "summary": "Soft-delete a memory (expected_version, reason and agent_id in the query or a JSON body)",
                "parameters": [{"name": "memory_id", "in": "path", "required": True, "schema": MEMORY_ID},
                               query("expected_version", VERSION), AGENT_QUERY, IDEMPOTENCY],
                "requestBody": {"required": False,
                                "content": {"application/json": {"schema": _ref("DeleteRequest")}}},
                "responses": {"200": _json(_ref("DeleteResponse")),
                              **_errors("400", "401", "403", "404", "409", "413", "422")}}},
            "/api/v1/stats": {"get": {"summary": "Memories per namespace (an agent key: the namespaces it may read), "
                                                 "events in the log, projector positions",
                                      "parameters": [AFTER_QUERY, AFTER_HEADER],
                                      "responses": {"200": _json(_ref("Stats")),
                                                    **_errors("400", "401", "404", "504")}}},
            **openapi_eval.PATHS,
            **openapi_feedback.PATHS,
            **openapi_episodes.PATHS,
            **openapi_graph.PATHS,
            **openapi_conflicts.PATHS,
            **openapi_triggers.PATHS,
            **openapi_metrics.PATHS,
            **openapi_replicas.PATHS,
            **openapi_backups.PATHS,
            **openapi_push.PATHS,
            **openapi_learning.PATHS,
        },
        "components": {
            "securitySchemes": {"ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}},
            "schemas": {**SCHEMAS, **openapi_eval.SCHEMAS, **openapi_feedback.SCHEMAS, **openapi_graph.SCHEMAS,
                        **openapi_episodes.SCHEMAS, **openapi_conflicts.SCHEMAS,
                        **openapi_triggers.SCHEMAS, **openapi_metrics.SCHEMAS,
                        **openapi_replicas.SCHEMAS, **openapi_backups.SCHEMAS, **openapi_push.SCHEMAS,
                        **openapi_learning.SCHEMAS},
            "responses": {
                "BadRequest": _error_response("Malformed JSON, wrong types, missing or unknown fields "
                                              "(unknown_field), or admin write without agent_id"),
                "Unauthorized": _error_response("Missing or invalid X-API-Key"),
                "Forbidden": _error_response("Not allowed for this key or namespace"),
                "NotFound": _error_response("Unknown memory or agent"),
                "Conflict": _error_response("Stale expected_version, already registered, or an episode id "
                                             "already committed with another body (episode_exists)"),
                "TooLarge": _error_response("Request body too large"),
                "Unprocessable": _error_response("Well-formed but not processable: Idempotency-Key reused with "
                                                 "another body, a graph query that does not parse "
                                                 "(invalid_query), after= beyond the log's end or a synonym "
                                                 "group without a new term (unprocessable)"),
                "ProjectionLag": _error_response("Projections did not reach `after` in time"),
                "RateLimited": _error_response("The agent's read or write bucket is empty (rate_limited): retry "
                                               "after Retry-After seconds; X-RateLimit-Limit/-Remaining/-Reset "
                                               "say its state"),
                "Unavailable": _error_response("The event log is unreachable (unavailable), was reset (log_reset), "
                                               "or a write's outcome is unknown (outcome_unknown: retry with "
                                               "the same Idempotency-Key)"),
            },
        },
    }
