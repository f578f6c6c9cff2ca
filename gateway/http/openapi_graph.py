"""OpenAPI fragments for the knowledge graph (merged into `gateway.http.openapi.openapi_document`)."""

from __future__ import annotations

from typing import Any

from gateway.http.openapi_eval import _body, _errors, _json, _ref
from gateway.http.openapi_fields import (
    AFTER, AFTER_HEADER, AFTER_QUERY, AGENT_ID, NAMESPACE, NAMESPACES, NAMESPACES_CSV, closed, query, text,
)

NODE_ID_MAX, QUERY_MAX = 512, 2000   # gateway/http/handlers/graph.py

_NODE = {"type": "object", "properties": {
    "id": {"type": "string"}, "type": {"type": "string", "enum": ["entity", "fact", "decision", "skill", "episode"]},
    "label": {"type": "string"}, "namespace": {"type": "string"}}}
_EDGE = {"type": "object", "properties": {
    "id": {"type": "string"}, "source_id": {"type": "string"}, "target_id": {"type": "string"},
    "relation_type": {"type": "string", "enum": ["DEPENDS_ON", "REFERENCES", "CONFLICTS_WITH", "CO_OCCURS",
                                                 "DERIVED_FROM"]},
    "weight": {"type": "number"}}}
_SCOPE: dict[str, Any] = {
    "agent_id": {**AGENT_ID, "description": "admin key: the agent whose graphs to read "
                                            "(without it the admin reads every graph)"},
    "namespace": {**NAMESPACE, "description": "narrow to one readable namespace"},
    "include_namespaces": NAMESPACES,
    "after": AFTER}

SCHEMAS: dict[str, Any] = {
    "GraphStats": {"type": "object", "properties": {
        "nodes": {"type": "integer"}, "edges": {"type": "integer"},
        "density": {"type": "number", "description": "edges / (nodes x (nodes - 1))"},
        "nodes_by_type": {"type": "object", "additionalProperties": {"type": "integer"}},
        "edges_by_type": {"type": "object", "additionalProperties": {"type": "integer"}},
        "by_namespace": {"type": "object", "additionalProperties": {"type": "object", "properties": {
            "nodes": {"type": "integer"}, "edges": {"type": "integer"}}}},
        "namespaces": {"type": "array", "items": {"type": "string"}}}},
    "NavigateRequest": closed({
        "source": {"type": "string", "minLength": 1, "maxLength": NODE_ID_MAX,
                   "description": "node id (a memory id, or entity:<ns>:<kind>:<norm>)"},
        "target": {"type": "string", "minLength": 1, "maxLength": NODE_ID_MAX},
        "max_hops": {"type": "integer", "minimum": 1, "maximum": 3, "default": 3}, **_SCOPE}, "source", "target"),
    "NavigateResponse": {"type": "object", "properties": {"paths": {"type": "array", "maxItems": 3, "items": {
        "type": "object", "properties": {"nodes": {"type": "array", "items": _NODE},
                                         "edges": {"type": "array", "items": _EDGE},
                                         "score": {"type": "number", "description": "product of the edge weights"}}}}}},
    "GraphQueryRequest": closed({
        "query": {**text(QUERY_MAX, blank=False), "description":
                  "MATCH pattern [WHERE cond (AND cond)*] RETURN ret (, ret)* [LIMIT n]; one or two hops, e.g. "
                  "MATCH (m:fact)-[:REFERENCES]->(e:entity {label: 'ComfyUI'}) RETURN m.id, m.label LIMIT 10 "
                  "(grammar: projections/graph/query.py; a query that does not parse: 422 "
                  "invalid_query)"}, **_SCOPE}, "query"),
    "GraphQueryResponse": {"type": "object", "properties": {
        "columns": {"type": "array", "items": {"type": "string"}},
        "rows": {"type": "array", "items": {"type": "array"}}}},
}

PATHS: dict[str, Any] = {
    "/api/v1/graph/stats": {"get": {
        "summary": "Graph size: nodes, edges, density, by type and namespace (the graphs the caller may read)",
        "parameters": [query("agent_id", _SCOPE["agent_id"]), query("namespace", _SCOPE["namespace"]),
                       query("include_namespaces", NAMESPACES_CSV), AFTER_QUERY, AFTER_HEADER],
        "responses": {"200": _json(_ref("GraphStats")), **_errors("400", "401", "403", "404", "422", "504")}}},
    "/api/v1/graph/navigate": {"post": {
        "summary": "Up to 3 paths between two nodes (<= 3 hops), by the product of edge weights",
        "parameters": [AFTER_QUERY, AFTER_HEADER], "requestBody": _body("NavigateRequest"),
        "responses": {"200": _json(_ref("NavigateResponse")), **_errors("400", "401", "403", "404", "413", "504")}}},
    "/api/v1/graph/query": {"post": {
        "summary": "A Cypher-like pattern query (parsed, never string-built SQL)",
        "parameters": [AFTER_QUERY, AFTER_HEADER], "requestBody": _body("GraphQueryRequest"),
        "responses": {"200": _json(_ref("GraphQueryResponse")),
                      **_errors("400", "401", "403", "404", "413", "422", "504")}}},
}
