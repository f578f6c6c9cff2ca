"""OpenAPI fragment for the self-metrics (merged into `gateway.http.openapi.openapi_document`)."""

from __future__ import annotations

from typing import Any

from gateway.http.handlers.metrics import MAX_DAYS
from gateway.http.openapi_eval import _errors, _json, _ref
from gateway.http.openapi_fields import AFTER_HEADER, AFTER_QUERY, query_int
from projections.metrics.self_metrics import DEFINITIONS

SCHEMAS: dict[str, Any] = {
    "InstancesResponse": {"type": "object", "properties": {
        "instances": {"type": "array", "items": {"type": "object", "properties": {
            "instance_id": {"type": "string"}, "role": {"type": "string", "enum": ["gateway", "projector", "replica"]},
            "url": {"type": ["string", "null"], "description": "its advertised HTTP base URL (gateways, replicas)"},
            "status": {"type": "string", "enum": ["up", "down"]},
            "last_seen": {"type": "string", "format": "date-time"}, "version": {"type": ["string", "null"]},
            "position": {"type": ["string", "null"], "description": "the lowest checkpoint its reads depend on"},
            "lag_events": {"type": ["integer", "null"], "description": "events after it (counted up to 10,000)"},
            "lag_ms": {"type": ["integer", "null"]}}}},
        "log": {"type": "object", "properties": {"last_position": {"type": ["string", "null"]}}}}},
    "SelfMetric": {"type": "object", "properties": {
        "name": {"type": "string", "enum": [d.name for d in DEFINITIONS]},
        "value": {"type": ["number", "null"]}, "reason": {"type": "string", "description": "why value is null"},
        "definition": {"type": "string"}, "healthy": {"type": "string"}, "alert": {"type": "string"},
        "status": {"type": "string", "enum": ["healthy", "warning", "alert", "no_data"]},
        "trend": {"type": "array", "items": {"type": "object", "properties": {
            "day": {"type": "string", "format": "date"}, "value": {"type": ["number", "null"]}}}}}},
    "SelfMetricsResponse": {"type": "object", "properties": {
        "day": {"type": "string", "format": "date"}, "metrics": {"type": "array", "items": _ref("SelfMetric")},
        "counts": {"type": "object", "description": "the day's counts the metrics are computed from"},
        "position": {"type": ["string", "null"]}}},
}

PATHS: dict[str, Any] = {
    "/api/v1/instances": {"get": {
        "summary": "Every zhiyi process that heartbeats (admin): gateways and projector processes, up or down "
                   "(no heartbeat for 30 s), with the position their reads reach and their lag",
        "responses": {"200": _json(_ref("InstancesResponse")), **_errors("401", "403")}}},
    "/metrics": {"get": {
        "summary": "Prometheus metrics (admin key as X-API-Key or Authorization: Bearer): uptime, request "
                   "durations by route, distillation queue, pending conflicts, vectors, LLM calls today, "
                   "consolidation, trigger failures, projector lag, events by type, recall cache, dead letters",
        "responses": {"200": {"description": "the Prometheus text format",
                              "content": {"text/plain": {"schema": {"type": "string"}}}},
                      **_errors("401", "403")}}},
    "/api/v1/metrics/self": {"get": {
        "summary": "The seven self-metrics of seed 3.2.3 (admin): today's value, health band, status and trend",
        "parameters": [query_int("days", 1, MAX_DAYS, MAX_DAYS), AFTER_QUERY, AFTER_HEADER],
        "responses": {"200": _json(_ref("SelfMetricsResponse")), **_errors("400", "401", "403", "504")}}},
}
