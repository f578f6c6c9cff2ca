"""Read side of the tombstones projection (`projections.tombstones.projector`): what forget runs evicted.

`TombstonesReader` is read-only and never creates files; a table that does not exist yet reads
as empty (`projections.core.lance_reader.TableReader`: every read sees the projector's latest commit). Listings are newest first
(`deleted_at` descending, then `id`): the matching (id, deleted_at) pairs are sorted, then only
the rows of the requested page are fetched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from projections.core.errors import InvalidQuery
from projections.core.lance import sql_in, sql_quote
from projections.core.lance_reader import TableReader

TABLE = "tombstones"
SCHEMA_VERSION = 2   # 2: restored_at (a merge undone)
REASONS = ("quality_low", "deprecated", "lru", "merged", "session_closed", "ephemeral_expired")
SCHEMA = pa.schema([
    ("id", pa.string()),                # uuid5 of original_id: one tombstone per memory
    ("original_id", pa.string()),       # the evicted memory
    ("content_snapshot", pa.string()),  # its content at eviction
    ("namespace", pa.string()),
    ("reason", pa.string()),            # REASONS
    ("merged_into", pa.string()),       # the target memory when merged, else ""
    ("deleted_at", pa.string()),        # ISO 8601 (UTC) of the memory.forgotten event
    ("version", pa.int32()),            # the memory's version the eviction made
    ("position", pa.string()),          # of the last event that changed the row
    ("restored_at", pa.string()),       # ISO 8601 of the memory.unmerged that undid a merge, else ""
])
COLUMNS: list[str] = list(SCHEMA.names)
MAX_LIMIT = 1000

Rows = list[dict[str, Any]]


def _where(namespace: str | None, original_id: str | None, reason: str | None) -> str | None:
    if reason is not None and reason not in REASONS:
        raise InvalidQuery(f"reason must be one of {', '.join(REASONS)}, got {reason!r}")
    parts = [f"{col} = {sql_quote(value)}" for col, value in
             (("namespace", namespace), ("original_id", original_id), ("reason", reason)) if value is not None]
    return " AND ".join(parts) or None


class TombstonesReader(TableReader):
    reads: ClassVar[tuple[str, ...]] = ("tombstones",)   # the projection to wait for (read-your-writes)

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, TABLE)

    async def _matching(self, where: str | None) -> pa.Table:
        """(id, deleted_at) of the matching tombstones, newest first."""
        table = await self._open()
        if table is None:
            return SCHEMA.empty_table().select(["id", "deleted_at"])
        q = table.query().select(["id", "deleted_at"])
        if where:
            q = q.where(where)
        keys = await q.to_arrow()
        order = pc.sort_indices(keys, sort_keys=[("deleted_at", "descending"), ("id", "ascending")])
        return keys.take(order)

    async def page(self, namespace: str | None = None, original_id: str | None = None, reason: str | None = None,
                   limit: int = 100, offset: int = 0) -> tuple[Rows, int]:
        """(the page of tombstones, newest first; how many match the filters in all)."""
        if not 0 < limit <= MAX_LIMIT:
            raise InvalidQuery(f"limit must be in 1..{MAX_LIMIT}, got {limit}")
        if offset < 0:
            raise InvalidQuery(f"offset must be >= 0, got {offset}")
        keys = await self._matching(_where(namespace, original_id, reason))
        ids = keys.column("id").to_pylist()[offset:offset + limit]
        if not ids or (table := await self._open()) is None:
            return [], keys.num_rows
        rows = await table.query().where(sql_in("id", ids)).select(COLUMNS).to_list()
        by_id = {r["id"]: r for r in rows}
        return [by_id[i] for i in ids if i in by_id], keys.num_rows

    async def list(self, namespace: str | None = None, original_id: str | None = None, reason: str | None = None,
                   limit: int = 100, offset: int = 0) -> Rows:
        """The tombstones matching every given filter, newest first (deleted_at desc, then id)."""
        rows, _ = await self.page(namespace, original_id, reason, limit, offset)
        return rows

    async def count(self, namespace: str | None = None, original_id: str | None = None,
                    reason: str | None = None) -> int:
        table = await self._open()
        if table is None:
            return 0
        where = _where(namespace, original_id, reason)
        return int(await table.count_rows(where) if where else await table.count_rows())
