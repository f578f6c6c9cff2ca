"""OpenAPI fragment for the backup endpoints (merged into `gateway.http.openapi.openapi_document`)."""

from __future__ import annotations

from typing import Any

from gateway.http.openapi_eval import _body, _errors, _json, _ref
from gateway.http.openapi_fields import POSITION, closed

_STARTED = {"backup_id": {"type": "string"}, "kind": {"type": "string", "enum": ["full", "incremental"]},
            "position": POSITION, "path": {"type": "string", "description": "where the archive will be"}}

SCHEMAS: dict[str, Any] = {
    "BackupRequest": closed({"incremental": {
        "type": "boolean", "default": False,
        "description": "only the events after the newest archive of the directory (its base)"}}),
    "BackupStarted": {"type": "object", "properties": _STARTED},
    "BackupsResponse": {"type": "object", "properties": {
        "directory": {"type": "string"},
        "running": {"type": ["object", "null"], "properties": {**_STARTED, "seconds": {"type": "number"}}},
        "last": {"type": ["object", "null"], "description": "the last backup this gateway wrote: its result and "
                                                           "status (written | failed | cancelled; error)"},
        "archives": {"type": "array", "items": {"type": "object", "properties": {
            **_STARTED, "base": {"type": ["string", "null"]}, "events": {"type": "integer"},
            "created_at": {"type": "string"}, "bytes": {"type": "integer"},
            "projections": {"type": "integer", "description": "projection copies it holds"},
            "error": {"type": "string", "description": "an unreadable archive"}}}}}},
}

PATHS: dict[str, Any] = {
    "/api/v1/admin/backup": {"post": {
        "summary": "Back up the log, the embedding cache and copies of the projections (admin); written in the "
                   "background into ZHIYI_BACKUP_DIR, answered once its position is fixed",
        "requestBody": _body("BackupRequest", required=False),
        "responses": {"202": _json(_ref("BackupStarted"), "Accepted: being written"),
                      **_errors("401", "403", "409", "422")}}},
    "/api/v1/admin/backups": {"get": {
        "summary": "The backup directory's archives, the backup being written and the last outcome (admin)",
        "responses": {"200": _json(_ref("BackupsResponse")), **_errors("401", "403")}}},
}
