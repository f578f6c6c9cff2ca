"""POST /api/v1/admin/backup (admin): a backup of the log, the embedding cache and copies of the
projections, written into ZHIYI_BACKUP_DIR (default <data-dir>/backups) in the background: 202 once
its position is fixed, `{backup_id, kind, position, path}`. GET /api/v1/admin/backups (admin): the
directory's archives, the backup being written and the outcome of the last one. The archive is the
one `zhiyi backup` writes (gateway.backup); `zhiyi restore` reads both."""

from __future__ import annotations

import asyncio

from aiohttp import web

from commands.error_codes import ErrorCode
from gateway.backup.archive import BackupBusy, BackupError
from gateway.http.appkeys import BACKUPS
from gateway.http.auth import require_admin
from gateway.http.errors import ApiError
from gateway.http.requests import json_body, json_response


async def start(request: web.Request) -> web.Response:
    require_admin(request)
    body, _ = await json_body(request, required=False)
    incremental = body.get("incremental", False)
    if not isinstance(incremental, bool):
        raise ApiError(400, ErrorCode.INVALID_REQUEST, "incremental: must be a boolean", {"field": "incremental"})
    try:
        reply = await request.app[BACKUPS].start(incremental=incremental)
    except BackupBusy as exc:
        raise ApiError(409, ErrorCode.BACKUP_RUNNING, str(exc), {}) from None
    except BackupError as exc:
        raise ApiError(422, ErrorCode.UNPROCESSABLE, str(exc), {}) from None
    except OSError as exc:   # the backup directory cannot be written: the operator's to fix, said plainly
        raise ApiError(500, ErrorCode.INTERNAL_ERROR, f"the backup directory cannot be written: {exc}",
                       {"directory": str(request.app[BACKUPS].directory)}) from None
    return json_response(reply, status=202)


async def listing(request: web.Request) -> web.Response:
    require_admin(request)
    return json_response(await asyncio.to_thread(request.app[BACKUPS].listing))   # reads every archive's manifest


def routes() -> list[web.RouteDef]:
    return [web.post("/api/v1/admin/backup", start), web.get("/api/v1/admin/backups", listing)]
