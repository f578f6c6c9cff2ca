"""OpenAPI fragments for the triggers and deep consolidation (merged into
`gateway.http.openapi.openapi_document`)."""

from __future__ import annotations

from typing import Any

from commands.consolidation.service import STEPS
from commands.triggers.specs import SPECS
from gateway.http.handlers.consolidation import MAX_RUNS, REASON_CHARS
from gateway.http.openapi_eval import _body, _errors, _json, _ref
from gateway.http.openapi_fields import AFTER_HEADER, AFTER_QUERY, POSITION, closed, query_int, text

NAMES = [s.name for s in SPECS]
_NAME = {"name": "name", "in": "path", "required": True, "schema": {"type": "string", "enum": NAMES}}
_STEP = {"name": "step", "in": "path", "required": True, "schema": {"type": "string", "enum": list(STEPS)}}
_OBJ: dict[str, Any] = {"type": "object"}
_NULLABLE_TIME = {"type": ["string", "null"], "format": "date-time"}

SCHEMAS: dict[str, Any] = {
    "Trigger": {"type": "object", "properties": {
        "name": {"type": "string", "enum": NAMES}, "condition": {"type": "string"},
        "cooldown_s": {"type": "integer"},
        "urgency": {"type": "number", "minimum": 0, "maximum": 1,
                    "description": "how far past its condition it is (the list is sorted by it, descending)"},
        "last_fired_at": _NULLABLE_TIME, "paused": {"type": "boolean"},
        "failures": {"type": "integer", "description": "failures in a row (3 pause it)"},
        "action": {"type": "string"}, "holds": {"type": "boolean", "description": "its condition holds now"},
        "due": {"type": "boolean", "description": "it would fire now (holds, not cooling, not paused)"},
        "reason": {"type": "string", "description": "the condition's figures now, or why it is disabled"},
        "disabled": {"type": ["string", "null"], "description": "why it cannot run in this deployment"},
        "cooling_until": _NULLABLE_TIME, "paused_reason": {"type": ["string", "null"]},
        "last_error": {"type": ["string", "null"]}, "fired": {"type": "integer"}}},
    "TriggersResponse": {"type": "object", "properties": {
        "triggers": {"type": "array", "items": _ref("Trigger")}, "now": {"type": "string", "format": "date-time"}}},
    "PauseRequest": closed({"reason": text(REASON_CHARS)}),
    "EmptyRequest": closed({}),
    "PauseResponse": {"type": "object", "properties": {
        "name": {"type": "string"}, "paused": {"type": "boolean"},
        "changed": {"type": "boolean", "description": "false: it already was"}, "position": {"type": "string"}}},
    "TriggersRunResponse": {"type": "object", "properties": {
        "fired": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "status": {"type": "string", "enum": ["fired", "failed"]},
            "result": _OBJ, "error": {"type": "string"}, "failures": {"type": "integer"}, "position": POSITION}}},
        "now": {"type": "string", "format": "date-time"}}},
    "ConsolidationStep": {"type": "object", "properties": {
        "step": {"type": "string", "enum": list(STEPS)},
        "status": {"type": "string", "enum": ["ok", "failed", "disabled", "not_run", "skipped"]},
        "detail": _OBJ, "error": {"type": "string"}}},
    "ConsolidationRun": {"type": "object", "properties": {
        "run_id": {"type": "string"}, "trigger": {"type": "string"},
        "steps": {"type": "array", "items": _ref("ConsolidationStep")},
        "report": {"type": "object", "description": "memories, clusters_found, noise_fraction, pruned, "
                                                    "rates_calibrated, patterns_written, backtrace_mean_cosine, "
                                                    "failed_steps, duration_ms, regressions"},
        "clusters": {"type": "integer"}, "patterns": {"type": "array", "items": _OBJ},
        "decay_rates": {"type": "array", "items": _OBJ}, "position": POSITION}},
    "ConsolidationStatus": {"type": "object", "properties": {
        "runs": {"type": "array", "items": _OBJ, "description": "newest first, with steps, clusters, patterns, report"},
        "steps": {"type": "object", "description": "per step: failures in a row, disabled, last status and error"},
        "decay_rates": {"type": "array", "items": _OBJ, "description": "the calibrated rate of each decay class"},
        "notices": {"type": "array", "items": _OBJ}, "position": {"type": ["string", "null"]}}},
    "StepEnableResponse": {"type": "object", "properties": {
        "step": {"type": "string"}, "disabled": {"type": "boolean"}, "changed": {"type": "boolean"},
        "position": {"type": "string"}}},
}

_ADMIN_ERRORS = ("400", "401", "403", "413", "504")

PATHS: dict[str, Any] = {
    "/api/v1/triggers": {"get": {
        "summary": "The eight triggers (admin), urgency descending: condition, cooldown, urgency, last firing, "
                   "paused, failures",
        "responses": {"200": _json(_ref("TriggersResponse")), **_errors("401", "403", "504")}}},
    "/api/v1/admin/triggers/run": {"post": {
        "summary": "Fire every due trigger now (admin), most urgent first",
        "requestBody": {"required": False, "content": {"application/json": {"schema": _ref("EmptyRequest")}}},
        "responses": {"200": _json(_ref("TriggersRunResponse")), **_errors(*_ADMIN_ERRORS)}}},
    "/api/v1/admin/triggers/{name}/pause": {"post": {
        "summary": "Pause a trigger (admin): its kill-switch",
        "parameters": [_NAME],
        "requestBody": {"required": False, "content": {"application/json": {"schema": _ref("PauseRequest")}}},
        "responses": {"200": _json(_ref("PauseResponse")), **_errors(*_ADMIN_ERRORS, "404")}}},
    "/api/v1/admin/triggers/{name}/resume": {"post": {
        "summary": "Resume a paused trigger (admin); its failure count starts over",
        "parameters": [_NAME],
        "requestBody": {"required": False, "content": {"application/json": {"schema": _ref("EmptyRequest")}}},
        "responses": {"200": _json(_ref("PauseResponse")), **_errors(*_ADMIN_ERRORS, "404")}}},
    "/api/v1/consolidation": {"get": {
        "summary": "Deep consolidation (admin): the latest runs and reports, the steps, the calibrated decay "
                   "rates, the notices",
        "parameters": [query_int("limit", 1, MAX_RUNS, 5), AFTER_QUERY, AFTER_HEADER],
        "responses": {"200": _json(_ref("ConsolidationStatus")), **_errors("400", "401", "403", "504")}}},
    "/api/v1/admin/consolidate": {"post": {
        "summary": "Run deep consolidation now (admin): clusters, prune + PageRank, calibration, backtrace, patterns",
        "requestBody": {"required": False, "content": {"application/json": {"schema": _ref("EmptyRequest")}}},
        "responses": {"200": _json(_ref("ConsolidationRun")), **_errors(*_ADMIN_ERRORS)}}},
    "/api/v1/admin/consolidation/steps/{step}/enable": {"post": {
        "summary": "Enable a consolidation step that three failures in a row disabled (admin)",
        "parameters": [_STEP],
        "requestBody": {"required": False, "content": {"application/json": {"schema": _ref("EmptyRequest")}}},
        "responses": {"200": _json(_ref("StepEnableResponse")), **_errors(*_ADMIN_ERRORS, "404")}}},
}
