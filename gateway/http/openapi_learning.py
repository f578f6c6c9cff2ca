"""OpenAPI fragments for V-value propagation and skills (merged into `gateway.http.openapi.openapi_document`)."""

from __future__ import annotations

from typing import Any

from commands.learning.skills import NAME_RE, STATUSES
from commands.learning.values import REWARD_MAX, REWARD_MIN
from gateway.http.openapi_eval import _body, _errors, _json, _ref
from gateway.http.openapi_fields import (
    AFTER_HEADER, AFTER_QUERY, AGENT_ACT, AGENT_QUERY, IDEMPOTENCY, POSITION, TRACE_ID, closed, query, query_int,
)

_SKILL_PROPS: dict[str, Any] = {
    "name": {"type": "string"}, "memory_id": {"type": "string"}, "namespace": {"type": "string"},
    "content": {"type": "string"}, "memory_type": {"type": "string", "enum": ["skill"]},
    "status": {"type": "string", "enum": list(STATUSES),
               "description": "active (eta >= 0.8), probation (0.5-0.8), retired (< 0.5)"},
    "eta": {"type": "number", "description": "alpha / (alpha + beta): the posterior success rate"},
    "alpha": {"type": "number", "description": "1 + successes (prior Beta(1, 1))"},
    "beta": {"type": "number", "description": "1 + failures"},
    "successes": {"type": "integer", "description": "useful votes at crystallisation + successful trials"},
    "failures": {"type": "integer"}, "trials": {"type": "integer", "description": "trials recorded since"},
    "crystallized_position": POSITION}

SCHEMAS: dict[str, Any] = {
    "VpropRequest": closed({"trace_id": TRACE_ID,
                            "reward": {"type": "number", "minimum": REWARD_MIN, "maximum": REWARD_MAX,
                                       "description": "the trace's outcome R"},
                            "agent_id": AGENT_ACT}, "trace_id", "reward"),
    "VpropResponse": {"type": "object", "properties": {
        "trace_id": {"type": "string"}, "reward": {"type": "number"},
        "steps": {"type": "integer", "description": "the trace's recalls"},
        "memories": {"type": "array", "items": {"type": "object", "properties": {
            "memory_id": {"type": "string"}, "v_value": {"type": "number"},
            "alpha": {"type": "number", "description": "1 / (useful feedback + 1)"},
            "step": {"type": "integer", "description": "the trace step (1-based) it was valued at"}}}},
        "position": POSITION, "duplicate": {"type": "boolean"}}},
    "Skill": {"type": "object", "properties": _SKILL_PROPS},
    "SkillsResponse": {"type": "object", "properties": {
        "skills": {"type": "array", "items": _ref("Skill")}, "count": {"type": "integer"},
        "position": {"type": ["string", "null"]}}},
    "Gap": {"type": "object", "properties": {
        "gap_id": {"type": "string"}, "agent_id": {"type": "string"}, "query": {"type": "string"},
        "queries": {"type": "array", "items": {"type": "string"}},
        "gap_type": {"type": "string", "enum": ["A", "B", "C", "D"]},
        "status": {"type": "string", "enum": ["open", "closed"]}, "suggestion": {"type": "string"},
        "evidence": {"type": "object"}, "detected_at": {"type": "string", "format": "date-time"},
        "position": POSITION, "repair": {"type": ["string", "null"], "enum": ["synonym", "retry", "answered", None]},
        "filled_count": {"type": "integer"}, "memory_ids": {"type": "array", "items": {"type": "string"}},
        "closed_position": {"type": ["string", "null"]}, "detail": {"type": "string"}}},
    "GapsResponse": {"type": "object", "properties": {
        "gaps": {"type": "array", "items": _ref("Gap")}, "count": {"type": "integer"},
        "detected": {"type": "integer"}, "closed": {"type": "integer"},
        "closure_rate": {"type": ["number", "null"], "description": "closed / detected (null: none detected)"},
        "position": {"type": ["string", "null"]}}},
    "WorldModel": {"type": "object", "properties": {
        "entities": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "string"}, "name": {"type": "string"}, "kind": {"type": "string"},
            "namespace": {"type": "string"}, "pagerank": {"type": "number"}, "mentions": {"type": "integer"}}}},
        "interactions": {"type": "array", "items": {"type": "object", "properties": {
            "source": {"type": "string"}, "target": {"type": "string"},
            "relation": {"type": "string", "enum": ["RELATES_TO", "DEPENDS_ON"]}, "weight": {"type": "integer"},
            "memory_id": {"type": "string"}}}},
        "constraints": {"type": "array", "items": {"type": "object", "properties": {
            "text": {"type": "string"}, "hard": {"type": "boolean"}, "memory_id": {"type": "string"},
            "namespace": {"type": "string"}}}},
        "reason": {"type": ["string", "null"], "description": "the event type that prompted the last update"},
        "updated_at": {"type": ["string", "null"], "format": "date-time"},
        "updated_position": {"type": ["string", "null"]}, "position": {"type": ["string", "null"]}}},
    "TrialRequest": closed({"success": {"type": "boolean"}, "agent_id": AGENT_ACT}, "success"),
    "TrialResponse": {"type": "object", "properties": {**_SKILL_PROPS, "position": POSITION,
                                                       "duplicate": {"type": "boolean"}}},
}

PATHS: dict[str, Any] = {
    "/api/v1/trace/vprop": {"post": {
        "summary": "Reward a decision trace: V_t = alpha R + (1 - alpha) 0.95 V_{t+1} back along the recalls made "
                   "with its trace_id (seed 6.3)", "parameters": [IDEMPOTENCY],
        "requestBody": _body("VpropRequest"),
        "responses": {"200": _json(_ref("VpropResponse")), **_errors("400", "401", "403", "404", "409", "422")}}},
    "/api/v1/skills": {"get": {
        "summary": "The crystallised skills the caller may read (seed 6.5)",
        "parameters": [query("status", {"type": "string", "enum": list(STATUSES)}), AFTER_QUERY, AGENT_QUERY,
                       AFTER_HEADER],
        "responses": {"200": _json(_ref("SkillsResponse")), **_errors("400", "401", "403", "404", "504")}}},
    "/api/v1/gaps": {"get": {
        "summary": "Knowledge gaps (seed 3.2.2): the agent's own (the admin key: every agent's, or agent_id's), "
                   "newest first, with the closure rate",
        "parameters": [query("status", {"type": "string", "enum": ["open", "closed", "all"]}),
                       query_int("limit", 1, 1000, 100), AFTER_QUERY, AGENT_QUERY, AFTER_HEADER],
        "responses": {"200": _json(_ref("GapsResponse")), **_errors("400", "401", "403", "404", "504")}}},
    "/api/v1/l3/worldmodel": {"get": {
        "summary": "The L3 world model (seed 6.6): entities and interactions from the knowledge graph, constraints "
                   "from the constraint memories",
        "parameters": [AFTER_QUERY, AGENT_QUERY, AFTER_HEADER],
        "responses": {"200": _json(_ref("WorldModel")), **_errors("400", "401", "403", "404", "504")}}},
    "/api/v1/skills/{name}/trial": {"post": {
        "summary": "Record one trial of a skill: its Beta posterior, eta and status move (seed 6.5)",
        "parameters": [{"name": "name", "in": "path", "required": True,
                        "schema": {"type": "string", "pattern": NAME_RE.pattern}}, IDEMPOTENCY],
        "requestBody": _body("TrialRequest"),
        "responses": {"200": _json(_ref("TrialResponse")), **_errors("400", "401", "403", "404", "409", "422")}}},
}
