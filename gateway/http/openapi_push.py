"""OpenAPI fragments for the push socket (merged into `gateway.http.openapi.openapi_document`)."""

from __future__ import annotations

from typing import Any

from gateway.http.openapi_eval import _errors, _ref
from gateway.http.openapi_fields import AFTER_QUERY, AGENT_ID, POSITION, query
from projections.queries.push.router import PUSH_TYPES

SCHEMAS: dict[str, Any] = {
    "PushMessage": {"type": "object", "required": ["type", "position", "data"], "properties": {
        "type": {"type": "string", "enum": ["connected", "resync", *PUSH_TYPES]},
        "position": {**POSITION, "description": "the log position of the event it comes from: reconnect with "
                                                "after=<the last one received> to get exactly what followed"},
        "data": {"type": "object", "description": "by type: prefetch.push {query, trace_id, memories: [{id, "
                                                  "content, namespace, score}]}; memory.updated {memory_id, "
                                                  "new_version, reason, change: corrected|stale, namespace}; "
                                                  "conflict.detected {conflict_id, kind, confidence, evidence, "
                                                  "entries}; conflict.resolved {conflict_id, resolution, "
                                                  "memory_ids}; quality.drop {memory_id, score, feedback, "
                                                  "suggestion}; deep.consolidation.done {run_id, report, steps}; "
                                                  "resync {reason, dropped}"}}},
}

PATHS: dict[str, Any] = {
    "/api/v1/ws/{agent_id}": {"get": {
        "summary": "The agent's push socket (WebSocket upgrade): JSON text frames `PushMessage`, first "
                   "`connected`; `resync` then close code 4000 when the client fell behind",
        "description": "The agent's own key or the admin key, in X-API-Key or `api_key`. Messages after `after` "
                       "(exclusive) are sent first, in log order, then live ones. A socket queues at most 1,000 "
                       "messages / 4 MiB for a client that does not read.",
        "parameters": [{"name": "agent_id", "in": "path", "required": True, "schema": AGENT_ID},
                       AFTER_QUERY,
                       query("api_key", {"type": "string", "maxLength": 256},
                             description="the key, for clients that cannot set a header on a WebSocket")],
        "responses": {"101": {"description": "Switching protocols; then PushMessage frames",
                              "content": {"application/json": {"schema": _ref("PushMessage")}}},
                      **_errors("400", "401", "403", "404")}}},
}
