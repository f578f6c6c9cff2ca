"""Read side of the episodes projection (`projections.episodes.projector`): raw episodes (L0) and
where their distillation stands.

Schema: seed 2.2's `episodes` table (`id, namespace, agent_id, content, chunks, timestamp,
distilled_to, distill_status`) with `distilled_to` a list (an episode yields several memories), plus
the client's `episode_id` (the row id is a uuid5 of namespace and episode id: ids are scoped to
their namespace), the episode's `kind` and task `status`, its turn count, and the distillation's
`extractor`, `reason`, `density` and times. `chunks` is the turns as JSON
(`[{role, content, at?}]`); `content` is the same rendered as `role: content` lines.

`EpisodesReader` is read-only and never creates files; a missing table reads as empty
(`projections.core.lance_reader.TableReader`).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, ClassVar

import orjson
import pyarrow as pa

from events import positions
from projections.core.lance import sql_quote
from projections.core.lance_reader import TableReader

TABLE = "episodes"
SCHEMA_VERSION = 1
DISTILL_STATUSES = ("pending", "processing", "completed", "skipped")
SCHEMA = pa.schema([
    ("id", pa.string()),                  # episode_row_id(namespace, episode_id)
    ("episode_id", pa.string()),
    ("namespace", pa.string()),
    ("agent_id", pa.string()),
    ("kind", pa.string()),                # conversation | task
    ("status", pa.string()),              # the task's outcome: ok | skipped | error
    ("content", pa.string()),             # the turns as "role: content" lines
    ("chunks", pa.string()),              # the turns as JSON
    ("turns", pa.int32()),
    ("timestamp", pa.string()),           # ISO 8601 of episode.committed
    ("distill_status", pa.string()),      # DISTILL_STATUSES
    ("distilled_to", pa.list_(pa.string())),
    ("extractor", pa.string()),
    ("reason", pa.string()),
    ("density", pa.float32()),
    ("started_at", pa.string()),          # ISO 8601 of episode.distillation_started, "" before
    ("distilled_at", pa.string()),        # ISO 8601 of episode.distilled, "" before
    ("committed_position", pa.string()),
    ("position", pa.string()),            # the last event folded into the row
])
COLUMNS: list[str] = list(SCHEMA.names)
_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "zhiyi:episodes")


def episode_row_id(namespace: str, episode_id: str) -> str:
    return str(uuid.uuid5(_ID_NAMESPACE, f"{namespace}\n{episode_id}"))


def episode_view(row: dict[str, Any]) -> dict[str, Any]:
    """The API's view of a row: the turns as objects, no internal columns."""
    return {"episode_id": row["episode_id"], "namespace": row["namespace"], "agent_id": row["agent_id"],
            "kind": row["kind"], "status": row["status"], "turns": orjson.loads(row["chunks"]),
            "timestamp": row["timestamp"], "distill_status": row["distill_status"],
            "distilled_to": list(row["distilled_to"] or []), "extractor": row["extractor"],
            "reason": row["reason"], "density": round(float(row["density"]), 3),
            "started_at": row["started_at"] or None, "distilled_at": row["distilled_at"] or None,
            "position": row["committed_position"]}


class EpisodesReader(TableReader):
    reads: ClassVar[tuple[str, ...]] = ("episodes",)   # the projection to wait for (read-your-writes)

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, TABLE)

    async def _rows(self, where: str, limit: int | None = None) -> list[dict[str, Any]]:
        table = await self._open()
        if table is None:
            return []
        q = table.query().where(where).select(COLUMNS)
        if limit is not None:
            q = q.limit(limit)
        return list(await q.to_list())

    async def get(self, namespace: str, episode_id: str) -> dict[str, Any] | None:
        """The episode's row, None when absent."""
        rows = await self._rows(f"id = {sql_quote(episode_row_id(namespace, episode_id))}", 1)
        return rows[0] if rows else None

    async def processing(self, limit: int = 1000) -> list[dict[str, Any]]:
        """Episodes waiting for their extractor (distill_status `processing`), oldest start first."""
        rows = await self._rows("distill_status = 'processing'")
        rows.sort(key=lambda r: positions.key(r["position"]))   # a processing row's last event is its start
        return rows[:limit]

    async def counts(self) -> dict[str, int]:
        """Episodes by distill_status (every status present, 0 when none)."""
        table = await self._open()
        out = {s: 0 for s in DISTILL_STATUSES}
        if table is None:
            return out
        for s in DISTILL_STATUSES:
            out[s] = int(await table.count_rows(f"distill_status = {sql_quote(s)}"))
        return out
