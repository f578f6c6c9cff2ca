"""OpenAPI fragment for the LAN replica endpoints of a primary (merged into
`gateway.http.openapi.openapi_document`)."""

from __future__ import annotations

from typing import Any

from commands.replica_ops import INSTANCE_ID_RE, MAX_AUDIT_EVENTS, MAX_OPS, MAX_REASON_CHARS, OP_ID_RE
from gateway.http.openapi_eval import _body, _errors, _json, _ref
from gateway.http.openapi_fields import AGENT_ID, POSITION, closed

_INSTANCE = {"type": "string", "pattern": INSTANCE_ID_RE.pattern}
_OP_ID = {"type": "string", "pattern": OP_ID_RE.pattern}

SCHEMAS: dict[str, Any] = {
    "ReplicaRegisterRequest": closed({"instance_id": {**_INSTANCE, "description": "default: a new UUID"}}),
    "ReplicaRegistered": {"type": "object", "properties": {
        "instance_id": _INSTANCE,
        "replica_key": {"type": "string", "description": "shown once: start the replica with ZHIYI_REPLICA_KEY "
                                                         "set to it (a new one revokes the old)"}}},
    "ReplicaOp": {"type": "object", "description": "kind feedback: {op_id, kind, agent_id, memory_id, verdict, "
                                                   "reason?, observed_at}; kind recall_served: {op_id, kind, events: "
                                                   "[{ns, agent, by, data}]}",
                  "required": ["op_id", "kind"], "properties": {
        "op_id": _OP_ID, "kind": {"type": "string", "enum": ["feedback", "recall_served"]},
        "agent_id": AGENT_ID, "memory_id": {"type": "string"},
        "verdict": {"type": "string", "enum": ["useful", "not_useful"]},
        "reason": {"type": "string", "maxLength": MAX_REASON_CHARS},
        "observed_at": {"type": "string", "description": "the replica's HLC stamp wall_ms:counter:node when it "
                                                         "recorded the vote: the vote register's order"},
        "events": {"type": "array", "maxItems": MAX_AUDIT_EVENTS, "items": {"type": "object"}}}},
    "ReplicaOpsRequest": closed({
        "ops": {"type": "array", "maxItems": MAX_OPS, "items": _ref("ReplicaOp")},
        "status": {"type": "object", "description": "the replica's heartbeat: position, lag_events, lag_ms, url, "
                                                    "version, link (listed by GET /api/v1/instances, role replica)"}}),
    "ReplicaOpsResponse": {"type": "object", "properties": {
        "results": {"type": "array", "items": {"type": "object", "properties": {
            "op_id": _OP_ID, "status": {"type": "string", "enum": ["applied", "duplicate", "rejected"]},
            "position": POSITION, "error": {"type": "object"}}}},
        "log": {"type": "object", "properties": {"last_position": {"type": ["string", "null"]},
                                                 "epoch": {"type": ["string", "null"]}}}}},
}

PATHS: dict[str, Any] = {
    "/api/v1/admin/replicas": {"post": {
        "summary": "Issue a replica key (admin): a LAN replica sends its operations and heartbeat with it",
        "requestBody": _body("ReplicaRegisterRequest", required=False),
        "responses": {"201": _json(_ref("ReplicaRegistered")), **_errors("401", "403")}}},
    "/api/v1/replicas/{instance_id}/ops": {"post": {
        "summary": "A replica's operations, each applied once (recall audits, feedback votes it buffered), and its "
                   "heartbeat; takes that replica's key only",
        "parameters": [{"name": "instance_id", "in": "path", "required": True, "schema": _INSTANCE}],
        "requestBody": _body("ReplicaOpsRequest"),
        "responses": {"200": _json(_ref("ReplicaOpsResponse")), **_errors("401")}}},
}
