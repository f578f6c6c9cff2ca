"""Backups a gateway takes in the background (`POST /api/v1/admin/backup`): one at a time per backup
directory (the directory's lock, gateway.backup.writer), the archive written by a task of the app,
its outcome kept for `GET /api/v1/admin/backups`. A gateway that stops cancels a backup being written
(its temporary file is removed; no archive appears)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from events.redis.client import Redis

from gateway.backup.archive import BackupError, read_manifest
from gateway.backup.writer import prepare, write

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class BackupJobs:
    redis: Redis
    directory: Path
    data_dir: Path
    embedding_cache: Path
    running: dict[str, Any] | None = None          # the reply of the backup being written
    last: dict[str, Any] | None = None             # the outcome of the last one (its result, or its error)
    _task: asyncio.Task | None = field(default=None, repr=False)

    async def start(self, *, incremental: bool) -> dict[str, Any]:
        """Fix the backup's position (raises BackupError / BackupBusy) and write it in the background;
        returns {backup_id, kind, position, path}."""
        prepared = await prepare(self.redis, self.directory, self.data_dir, incremental=incremental)
        reply = prepared.reply()
        self.running = {**reply, "started_at": time.time()}
        self._task = asyncio.create_task(self._write(prepared, reply), name=f"backup:{reply['backup_id']}")
        return reply

    async def _write(self, prepared: Any, reply: dict[str, Any]) -> None:
        try:
            result = await write(self.redis, prepared, self.embedding_cache)
            self.last = {**result, "status": "written"}
        except asyncio.CancelledError:
            self.last = {**reply, "status": "cancelled"}
            raise
        except Exception as exc:  # noqa: BLE001 - reported by GET /api/v1/admin/backups and the log
            log.exception("backup.failed", backup_id=reply["backup_id"])
            self.last = {**reply, "status": "failed", "error": f"{type(exc).__name__}: {exc}"}
        finally:
            self.running = None

    async def wait(self) -> None:
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    async def stop(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
        await self.wait()

    def listing(self) -> dict[str, Any]:
        found: list[dict[str, Any]] = []
        for path in sorted(self.directory.glob("zhiyi-*.tar")) if self.directory.is_dir() else []:
            try:
                a = read_manifest(path)
            except BackupError as exc:
                found.append({"path": str(path), "error": str(exc)})
                continue
            found.append({"backup_id": a.backup_id, "kind": a.manifest["kind"], "base": a.manifest.get("base"),
                          "position": a.manifest["position"], "events": a.manifest["events"],
                          "created_at": a.manifest["created_at"], "path": str(a.path), "bytes": path.stat().st_size,
                          "projections": sum(1 for c in a.archived_projections if c["kind"] in ("sqlite", "lance"))})
        now, running = self.running, None       # read once: the loop may end the backup meanwhile
        if now is not None:
            running = {k: v for k, v in now.items() if k != "started_at"}
            running["seconds"] = round(time.time() - now["started_at"], 3)
        return {"directory": str(self.directory), "running": running, "last": self.last, "archives": found}
