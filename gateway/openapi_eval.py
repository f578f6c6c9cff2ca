"""OpenAPI fragments for the synonyms admin endpoints and the evaluation framework (merged into
`gateway.openapi.openapi_document`)."""

from __future__ import annotations

from typing import Any

POSITION = {"type": "string", "pattern": r"^\d+-\d+$", "description": "Stream position (opaque; compare as (ms, seq))"}
_STR_LIST = {"type": "array", "items": {"type": "string"}}
_SCORES = {"type": "object", "additionalProperties": {"type": "number"}}


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict, description: str = "OK") -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: str) -> dict:
    names = {"400": "BadRequest", "401": "Unauthorized", "403": "Forbidden", "404": "NotFound", "409": "Conflict",
             "504": "ProjectionLag"}
    return {c: {"$ref": f"#/components/responses/{names[c]}"} for c in codes}


def _body(name: str, required: bool = True) -> dict:
    return {"required": required, "content": {"application/json": {"schema": _ref(name)}}}


SCHEMAS: dict[str, Any] = {
    "SynonymsRequest": {"type": "object", "required": ["term", "synonyms"], "properties": {
        "term": {"type": "string", "minLength": 1, "maxLength": 64},
        "synonyms": {"type": "array", "minItems": 1, "maxItems": 32, "items": {"type": "string", "maxLength": 64},
                     "description": "term and synonyms become mutually synonymous (one symmetric group)"},
        "namespace": {"type": "string", "default": "shared"}}},
    "SynonymsAdded": {"type": "object", "properties": {
        "term": {"type": "string"}, "synonyms": _STR_LIST, "namespace": {"type": "string"}, "position": POSITION}},
    "SynonymsList": {"type": "object", "properties": {
        "synonyms": {"type": "array", "items": _ref("SynonymsAdded")}, "total": {"type": "integer"},
        "position": POSITION}},
    "EvalQuery": {"type": "object", "required": ["query", "expected_ids"], "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 2000},
        "expected_ids": {"type": "array", "minItems": 1, "maxItems": 100, "items": {"type": "string"}},
        "tag": {"type": "string", "maxLength": 64}, "agent_id": {"type": "string"},
        "difficulty": {"type": "string", "enum": ["easy", "medium", "hard"]}}},
    "EvalRunRequest": {"type": "object", "description": "queries, or golden_set_id, or neither (the latest "
                                                        "golden set)", "properties": {
        "queries": {"type": "array", "minItems": 1, "maxItems": 1000, "items": _ref("EvalQuery")},
        "golden_set_id": {"type": "string"}, "top_k": {"type": "integer", "minimum": 1, "maximum": 100, "default": 5},
        "namespace": {"type": "string"}, "after": POSITION}},
    "EvalReport": {"type": "object", "properties": {
        "recall_at_5": {"type": "number"}, "precision_at_5": {"type": "number"},
        "mean_reciprocal_rank": {"type": "number"}, "recall_at_k": {"type": "number"},
        "precision_at_k": {"type": "number"}, "k": {"type": "integer"},
        "recall_at_5_by_tag": _SCORES, "recall_by_agent": _SCORES,
        "query_details": {"type": "array", "items": {"type": "object", "properties": {
            "query": {"type": "string"}, "expected_ids": _STR_LIST, "hits": _STR_LIST, "misses": _STR_LIST,
            "recall_at_5": {"type": "number"}, "precision_at_5": {"type": "number"},
            "reciprocal_rank": {"type": "number"}, "returned": _STR_LIST}}},
        "queries": {"type": "integer"}, "top_k": {"type": "integer"},
        "golden_set_id": {"type": ["string", "null"]}, "position": POSITION}},
    "GenerateRequest": {"type": "object", "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 200, "default": 12},
        "seed": {"type": "integer", "minimum": 0, "description": "default: from the log position"},
        "namespace": {"type": "string"}, "after": POSITION}},
    "GoldenSet": {"type": "object", "properties": {
        "golden_set_id": {"type": "string"}, "queries": {"type": "array", "items": _ref("EvalQuery")},
        "position": POSITION, "generator": {"type": "string"}, "seed": {"type": "integer"},
        "namespace": {"type": ["string", "null"]}}},
    "EvalHistory": {"type": "object", "properties": {
        "runs": {"type": "array", "items": {"type": "object", "properties": {
            "position": POSITION, "timestamp": {"type": "string", "format": "date-time"},
            "agent": {"type": "string"}, "golden_set_id": {"type": ["string", "null"]},
            "top_k": {"type": "integer"}, "queries": {"type": "integer"}, "metrics": {"type": "object"}}}},
        "delta": {"type": ["object", "null"], "description": "newest minus previous run"},
        "regressed": {"type": "boolean", "description": "recall@5 dropped by more than 0.05"}}},
}

PATHS: dict[str, Any] = {
    "/api/v1/admin/synonyms": {
        "post": {"summary": "Add a symmetric synonym group (admin key)", "requestBody": _body("SynonymsRequest"),
                 "responses": {"201": _json(_ref("SynonymsAdded"), "Added"), **_errors("400", "401", "403")}},
        "get": {"summary": "List synonym additions, oldest first (admin key)", "parameters": [
            {"name": "namespace", "in": "query", "schema": {"type": "string"}},
            {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 10000}},
            {"name": "after", "in": "query", "schema": POSITION}],
            "responses": {"200": _json(_ref("SynonymsList")), **_errors("400", "401", "403", "504")}}},
    "/api/v1/eval/run": {"post": {
        "summary": "Run golden queries through recall: recall@5, precision@5, MRR (admin key, or an agent key "
                   "for its own scope); appends eval.completed",
        "requestBody": _body("EvalRunRequest", required=False),
        "responses": {"200": _json(_ref("EvalReport")), **_errors("400", "401", "403", "404", "504")}}},
    "/api/v1/eval/generate": {"post": {
        "summary": "Build a rule-based golden set from stored memories (admin key)",
        "requestBody": _body("GenerateRequest", required=False),
        "responses": {"201": _json(_ref("GoldenSet"), "Created"), **_errors("400", "401", "403", "404", "504")}}},
    "/api/v1/eval/history": {"get": {
        "summary": "Evaluation runs, newest first, with the delta and a regression flag (an agent key sees its own)",
        "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000}}],
        "responses": {"200": _json(_ref("EvalHistory")), **_errors("400", "401")}}},
}
