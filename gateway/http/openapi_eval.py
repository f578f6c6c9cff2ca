"""OpenAPI fragments for the synonyms admin endpoints and the evaluation framework (merged into
`gateway.http.openapi.openapi_document`)."""

from __future__ import annotations

from typing import Any

from commands.evaluation import DIFFICULTIES, GOLDEN_ID_RE, MAX_EXPECTED, MAX_GENERATED
from gateway.http.openapi_fields import (
    IDEMPOTENCY, AFTER, AFTER_HEADER, AFTER_QUERY, AGENT_ID, LIMITS, MEMORY_ID, NAMESPACE, POSITION, closed, query, query_int, text,
)
from projections.queries.evaluation.metrics import MAX_QUERIES
_STR_LIST = {"type": "array", "items": {"type": "string"}}
_SCORES = {"type": "object", "additionalProperties": {"type": "number"}}


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict, description: str = "OK") -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: str) -> dict:
    """The listed error answers plus 400 (unknown_field is possible everywhere) and 503."""
    names = {"400": "BadRequest", "401": "Unauthorized", "403": "Forbidden", "404": "NotFound", "409": "Conflict",
             "413": "TooLarge", "422": "Unprocessable", "429": "RateLimited", "503": "Unavailable",
             "504": "ProjectionLag"}
    extra = {"422"} if "504" in codes else set()   # after= beyond the log's end
    return {c: {"$ref": f"#/components/responses/{names[c]}"} for c in sorted({"400", "429", "503", *extra, *codes})}


def _body(name: str, required: bool = True) -> dict:
    return {"required": required, "content": {"application/json": {"schema": _ref(name)}}}


SCHEMAS: dict[str, Any] = {
    "SynonymsRequest": closed({
        "term": text(LIMITS.max_synonym_chars, blank=False, control=False),
        "synonyms": {"type": "array", "minItems": 1, "maxItems": LIMITS.max_synonyms,
                     "items": text(LIMITS.max_synonym_chars, blank=False, control=False),
                     "description": "term and synonyms become mutually synonymous (one symmetric group)"},
        "namespace": {**NAMESPACE, "default": "shared"}}, "term", "synonyms"),
    "SynonymsAdded": {"type": "object", "properties": {
        "term": {"type": "string"}, "synonyms": _STR_LIST, "namespace": {"type": "string"}, "position": POSITION}},
    "SynonymsList": {"type": "object", "properties": {
        "synonyms": {"type": "array", "items": _ref("SynonymsAdded")}, "total": {"type": "integer"},
        "position": POSITION}},
    "EvalQuery": closed({
        "query": text(LIMITS.max_query_chars, blank=False),
        "expected_ids": {"type": "array", "minItems": 1, "maxItems": MAX_EXPECTED, "items": MEMORY_ID},
        "tag": text(64), "agent_id": AGENT_ID,
        "difficulty": {"type": "string", "enum": list(DIFFICULTIES)}}, "query", "expected_ids"),
    "EvalRunRequest": closed({
        "queries": {"type": "array", "minItems": 1, "maxItems": MAX_QUERIES, "items": _ref("EvalQuery")},
        "golden_set_id": {"type": "string", "pattern": GOLDEN_ID_RE.pattern},
        "top_k": {"type": "integer", "minimum": 1, "maximum": LIMITS.max_top_k, "default": 5},
        "namespace": NAMESPACE, "after": AFTER},
        description="queries, or golden_set_id, or neither (the latest golden set)",
        **{"not": {"required": ["queries", "golden_set_id"]}}),
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
    "GenerateRequest": closed({
        "n": {"type": "integer", "minimum": 1, "maximum": MAX_GENERATED, "default": 12},
        "seed": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1, "description": "default: from the log position"},
        "namespace": NAMESPACE, "after": AFTER}),
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
        "post": {"summary": "Add a symmetric synonym group (admin key)", "parameters": [IDEMPOTENCY],
                 "requestBody": _body("SynonymsRequest"),
                 "responses": {"201": _json(_ref("SynonymsAdded"), "Added"), **_errors("400", "401", "403", "413", "422")}},
        "get": {"summary": "List synonym additions, oldest first (admin key)", "parameters": [
            query("namespace", NAMESPACE), query_int("limit", 1, 10_000, 1_000), AFTER_QUERY, AFTER_HEADER],
            "responses": {"200": _json(_ref("SynonymsList")), **_errors("400", "401", "403", "504")}}},
    "/api/v1/eval/run": {"post": {
        "summary": "Run golden queries through recall: recall@5, precision@5, MRR (admin key, or an agent key "
                   "for its own scope); appends eval.completed",
        "parameters": [AFTER_QUERY, AFTER_HEADER], "requestBody": _body("EvalRunRequest", required=False),
        "responses": {"200": _json(_ref("EvalReport")), **_errors("400", "401", "403", "404", "413", "504")}}},
    "/api/v1/eval/generate": {"post": {
        "summary": "Build a rule-based golden set from stored memories (admin key)",
        "parameters": [AFTER_QUERY, AFTER_HEADER], "requestBody": _body("GenerateRequest", required=False),
        "responses": {"201": _json(_ref("GoldenSet"), "Created"), **_errors("400", "401", "403", "404", "413", "504")}}},
    "/api/v1/eval/history": {"get": {
        "summary": "Evaluation runs, newest first, with the delta and a regression flag (an agent key sees its own)",
        "parameters": [query_int("limit", 1, 1000, 20)],
        "responses": {"200": _json(_ref("EvalHistory")), **_errors("400", "401")}}},
}
