"""The OpenAPI 3.1 document served at GET /api/v1/openapi.json."""

from __future__ import annotations

from typing import Any

from events.vocabulary import CATEGORIES, DECAY_CLASSES, KINDS, TIERS
from gateway import openapi_eval, openapi_feedback, openapi_graph


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict, description: str = "") -> dict:
    return {"description": description or "OK", "content": {"application/json": {"schema": schema}}}


ERRORS = {code: {"$ref": f"#/components/responses/{name}"} for code, name in (
    ("400", "BadRequest"), ("401", "Unauthorized"), ("403", "Forbidden"), ("404", "NotFound"),
    ("409", "Conflict"), ("413", "TooLarge"), ("422", "Unprocessable"), ("504", "ProjectionLag"))}


def _errors(*codes: str) -> dict:
    return {c: ERRORS[c] for c in codes}


POSITION = {"type": "string", "pattern": r"^\d+-\d+$", "description": "Stream position (opaque; compare as (ms, seq))"}

SCHEMAS: dict[str, Any] = {
    "Error": {"type": "object", "required": ["error"], "properties": {"error": {
        "type": "object", "required": ["code", "message", "details"],
        "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "details": {"type": "object"}}}}},
    "RegisterRequest": {"type": "object", "required": ["agent_id"], "properties": {
        "agent_id": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"},
        "agent_type": {"type": "string", "maxLength": 64},
        "namespace": {"type": "string", "description": "main namespace (default <agent_id>-main)"}}},
    "RegisterResponse": {"type": "object", "properties": {
        "agent_id": {"type": "string"}, "api_key": {"type": "string", "description": "shown once; stored hashed"},
        "namespaces": {"type": "array", "items": {"type": "string"}}, "ws_endpoint": {"type": "string"},
        "position": POSITION}},
    "Memory": {"type": "object", "required": ["content"], "properties": {
        "content": {"type": "string", "minLength": 1, "maxLength": 16000},
        "category": {"type": "string", "enum": list(CATEGORIES), "default": "fact"},
        "decay_class": {"type": "string", "enum": list(DECAY_CLASSES),
                        "description": "defaulted from category when absent"},
        "namespace": {"type": "string", "description": "own main/ephemeral namespace or shared; default own main"},
        "tier": {"type": "string", "enum": list(TIERS), "default": "normal"},
        "kind": {"type": "string", "enum": list(KINDS), "default": "L1"},
        "source": {"type": "string", "maxLength": 128, "default": "agent_inference"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 64}, "maxItems": 32},
        "depends_on": {"type": "array", "items": {"type": "string"}, "maxItems": 64},
        "agent_id": {"type": "string", "description": "admin key only: the agent to act for"}}},
    "CommitResponse": {"type": "object", "properties": {
        "memory_id": {"type": "string"}, "namespace": {"type": "string"}, "version": {"type": "integer"},
        "position": POSITION, "duplicate": {"type": "boolean"}}},
    "BatchRequest": {"type": "object", "required": ["entries"], "properties": {
        "entries": {"type": "array", "minItems": 1, "maxItems": 1000, "items": _ref("Memory")},
        "agent_id": {"type": "string"}}},
    "BatchResponse": {"type": "object", "properties": {
        "results": {"type": "array", "items": {"type": "object", "properties": {
            "memory_id": {"type": "string"}, "position": POSITION}}},
        "position": POSITION, "duplicate": {"type": "boolean"}}},
    "RecallRequest": {"type": "object", "required": ["query"], "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 2000},
        "top_k": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
        "namespace": {"type": "string", "description": "narrow to one readable namespace"},
        "include_namespaces": {"type": "array", "items": {"type": "string"},
                               "description": "add other agents' -main namespaces (opt-in)"},
        "min_score": {"type": "number", "minimum": -1, "maximum": 1,
                      "description": "drop results whose score is below this"},
        "diversity": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5,
                      "description": "MMR: 0 = relevance order, 1 = maximum diversity"},
        "context": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.6,
                    "description": "weight of context neighbours (memories the same agent committed just "
                                   "before/after, within 30 min) in the lexical score; 0 = off"},
        "importance_weight": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.2,
                              "description": "weight of each memory's standing (importance, quality) in its "
                                             "score: relevance x (1 + w x (standing - 0.5)); 0 = relevance only"},
        "cache": {"type": "boolean", "default": True, "description": "use the search cache (TTL 1 h)"},
        "after": POSITION, "agent_id": {"type": "string"}}},
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
        "namespaces": {"type": "array", "items": {"type": "string"}}, "position": POSITION}},
    "DeleteResponse": {"type": "object", "properties": {
        "memory_id": {"type": "string"}, "version": {"type": "integer"}, "position": POSITION}},
    "Health": {"type": "object", "properties": {
        "status": {"type": "string", "enum": ["ok", "degraded"]}, "redis": {"type": "boolean"},
        "log": {"type": "object"}, "projectors": {"type": "object"}}},
    "Stats": {"type": "object", "properties": {
        "memories": {"type": "object"}, "events": {"type": "object"}, "projectors": {"type": "object"}}},
}


def _error_response(description: str) -> dict:
    return _json(_ref("Error"), description)


IDEMPOTENCY = {"name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string", "maxLength": 128},
               "description": "scoped per agent, kept 24 h; a repeat returns the original result (200), "
                              "the same key with another body is refused (422)"}
AFTER_HEADER = {"name": "X-Zhiyi-After", "in": "header", "required": False, "schema": POSITION}


def openapi_document() -> dict:
    recall_params = [
        {"name": "query", "in": "query", "required": True, "schema": {"type": "string"}},
        {"name": "top_k", "in": "query", "schema": {"type": "integer"}},
        {"name": "namespace", "in": "query", "schema": {"type": "string"}},
        {"name": "include_namespaces", "in": "query", "schema": {"type": "string"},
         "description": "comma-separated"},
        {"name": "min_score", "in": "query", "schema": {"type": "number"}},
        {"name": "diversity", "in": "query", "schema": {"type": "number", "minimum": 0, "maximum": 1}},
        {"name": "context", "in": "query", "schema": {"type": "number", "minimum": 0, "maximum": 1}},
        {"name": "importance_weight", "in": "query", "schema": {"type": "number", "minimum": 0, "maximum": 1}},
        {"name": "cache", "in": "query", "schema": {"type": "boolean"}},
        {"name": "after", "in": "query", "schema": POSITION},
        {"name": "agent_id", "in": "query", "schema": {"type": "string"}},
        AFTER_HEADER,
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
                                "security": [], "responses": {"200": _json(_ref("Health")),
                                                              "503": _json(_ref("Health"), "Redis unreachable")}}},
            "/api/v1/openapi.json": {"get": {"summary": "This document", "security": [],
                                             "responses": {"200": {"description": "OpenAPI document"}}}},
            "/api/v1/agents/register": {"post": {
                "summary": "Register an agent (admin key); its API key works at once",
                "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("RegisterRequest")}}},
                "responses": {"201": _json(_ref("RegisterResponse"), "Registered"),
                              **_errors("400", "401", "403", "409")}}},
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
                         "parameters": [AFTER_HEADER],
                         "requestBody": {"required": True,
                                         "content": {"application/json": {"schema": _ref("RecallRequest")}}},
                         "responses": {"200": _json(_ref("RecallResponse")),
                                       **_errors("400", "401", "403", "404", "504")}},
                "get": {"summary": "Recall memories by meaning (query parameters)", "parameters": recall_params,
                        "responses": {"200": _json(_ref("RecallResponse")),
                                      **_errors("400", "401", "403", "404", "504")}}},
            "/api/v1/bootstrap": {"get": {
                "summary": "About ten core facts for a cold-starting agent (tier=core first, then importance)",
                "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1,
                                                                            "maximum": 50, "default": 10}},
                               {"name": "agent_id", "in": "query", "schema": {"type": "string"}},
                               {"name": "after", "in": "query", "schema": POSITION}, AFTER_HEADER],
                "responses": {"200": _json(_ref("BootstrapResponse")), **_errors("400", "401", "403", "404", "504")}}},
            "/api/v1/distilled/{memory_id}": {"delete": {
                "summary": "Soft-delete a memory",
                "parameters": [{"name": "memory_id", "in": "path", "required": True, "schema": {"type": "string"}},
                               {"name": "expected_version", "in": "query", "schema": {"type": "integer"}},
                               {"name": "agent_id", "in": "query", "schema": {"type": "string"}}],
                "responses": {"200": _json(_ref("DeleteResponse")), **_errors("400", "401", "403", "404", "409")}}},
            "/api/v1/stats": {"get": {"summary": "Memories per namespace, events in the log, projector positions",
                                      "parameters": [{"name": "after", "in": "query", "schema": POSITION},
                                                     AFTER_HEADER],
                                      "responses": {"200": _json(_ref("Stats")), **_errors("400", "401", "504")}}},
            **openapi_eval.PATHS,
            **openapi_feedback.PATHS,
            **openapi_graph.PATHS,
        },
        "components": {
            "securitySchemes": {"ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}},
            "schemas": {**SCHEMAS, **openapi_eval.SCHEMAS, **openapi_feedback.SCHEMAS, **openapi_graph.SCHEMAS},
            "responses": {
                "BadRequest": _error_response("Malformed JSON, wrong types, missing fields, or admin write "
                                              "without agent_id"),
                "Unauthorized": _error_response("Missing or invalid X-API-Key"),
                "Forbidden": _error_response("Not allowed for this key or namespace"),
                "NotFound": _error_response("Unknown memory or agent"),
                "Conflict": _error_response("Stale expected_version or already registered"),
                "TooLarge": _error_response("Request body too large"),
                "Unprocessable": _error_response("Idempotency-Key reused with another body"),
                "ProjectionLag": _error_response("Projections did not reach `after` in time"),
            },
        },
    }
