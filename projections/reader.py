"""Read access to the memories table for the gateway.

`asearch` (the recall hot path) uses LanceDB's async API on the caller's event loop; the
other reads are sync (call them via `asyncio.to_thread`). Both connections are opened with
`read_consistency_interval=timedelta(0)`, so every read sees the latest version the
projector committed, even from another process. A table that does not exist yet reads as
empty. Namespaces are validated and quoted before they reach a filter.
"""

from __future__ import annotations

import re
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import orjson
import pyarrow.compute as pc

from projections.errors import InvalidQuery
from projections.lance import sql_in, sql_quote
from projections.memory_rows import SCALAR_COLUMNS, TABLE

NAMESPACE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
SEARCH_COLUMNS = [c for c in SCALAR_COLUMNS if c != "version_history"]
MAX_LIMIT = 1000


def valid_namespaces(namespaces: list[str]) -> list[str]:
    """The distinct namespaces, in order; InvalidQuery for any that does not match NAMESPACE_RE."""
    out: list[str] = []
    for ns in namespaces:
        if not isinstance(ns, str) or not NAMESPACE_RE.match(ns):
            raise InvalidQuery(f"invalid namespace: {ns!r}")
        if ns not in out:
            out.append(ns)
    return out


def _shape(row: dict[str, Any]) -> dict[str, Any]:
    """Decode the JSON-string columns into lists."""
    for col in ("depends_on", "version_history"):
        if isinstance(row.get(col), str):
            row[col] = orjson.loads(row[col] or "[]")
    return row


def _checked(namespaces: list[str], limit: int) -> list[str]:
    ns = valid_namespaces(namespaces)
    if not 0 < limit <= MAX_LIMIT:
        raise InvalidQuery(f"limit must be in 1..{MAX_LIMIT}, got {limit}")
    return ns


def _as_query(vector: np.ndarray) -> np.ndarray:
    return np.asarray(vector, dtype=np.float32).reshape(-1)


def _search_filter(namespaces: list[str]) -> str:
    return f"{sql_in('namespace', namespaces)} AND is_deleted = false"


def _scored(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Distance -> cosine similarity `score`, JSON columns decoded, best first (ties by id)."""
    for row in rows:
        row["score"] = float(np.clip(1.0 - float(row.pop("_distance")), -1.0, 1.0))
        _shape(row)
    rows.sort(key=lambda r: (-r["score"], r["id"]))
    return rows


class MemoriesReader:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._db: Any = None
        self._table: Any = None
        self._lock = threading.Lock()
        self._adb: Any = None
        self._atable: Any = None

    def _open(self) -> Any | None:
        if self._table is not None:
            return self._table
        with self._lock:
            if self._table is None:
                if not (self.directory / f"{TABLE}.lance").exists():
                    return None
                if self._db is None:
                    self._db = lancedb.connect(str(self.directory), read_consistency_interval=timedelta(0))
                try:
                    self._table = self._db.open_table(TABLE)
                except ValueError:  # "Table 'memories' was not found" (being created)
                    return None
        return self._table

    def search(self, vector: np.ndarray, namespaces: list[str], limit: int) -> list[dict[str, Any]]:
        """Nearest non-deleted memories in `namespaces`; each row has `score` = cosine similarity."""
        ns = _checked(namespaces, limit)
        table = self._open()
        if table is None or not ns:
            return []
        rows = (table.search(_as_query(vector), vector_column_name="vector")
                .distance_type("cosine")
                .where(_search_filter(ns), prefilter=True)
                .select([*SEARCH_COLUMNS, "_distance"])
                .limit(limit)
                .to_list())
        return _scored(rows)

    async def asearch(self, vector: np.ndarray, namespaces: list[str], limit: int) -> list[dict[str, Any]]:
        """`search` on the running event loop (no worker thread, no per-query schema round trips)."""
        ns = _checked(namespaces, limit)
        table = await self._aopen()
        if table is None or not ns:
            return []
        rows = await (table.vector_search(_as_query(vector))
                      .column("vector")
                      .distance_type("cosine")
                      .where(_search_filter(ns))  # a prefilter in the async API
                      .select([*SEARCH_COLUMNS, "_distance"])
                      .limit(limit)
                      .to_list())
        return _scored(rows)

    async def _aopen(self) -> Any | None:
        if self._atable is not None:
            return self._atable
        if not (self.directory / f"{TABLE}.lance").exists():
            return None
        if self._adb is None:
            self._adb = await lancedb.connect_async(str(self.directory), read_consistency_interval=timedelta(0))
        try:
            self._atable = await self._adb.open_table(TABLE)
        except ValueError:  # "Table 'memories' was not found" (being created)
            return None
        return self._atable

    def get(self, memory_id: str) -> dict[str, Any] | None:
        """One memory by id (deleted ones too: check `is_deleted`), without its vector."""
        table = self._open()
        if table is None:
            return None
        rows = table.search().where(f"id = {sql_quote(memory_id)}").select(SCALAR_COLUMNS).limit(1).to_list()
        return _shape(rows[0]) if rows else None

    def count_by_namespace(self) -> dict[str, int]:
        """Non-deleted memories per namespace."""
        table = self._open()
        if table is None:
            return {}
        data = table.search().where("is_deleted = false").select(["namespace"]).limit(None).to_arrow()
        if data.num_rows == 0:
            return {}
        counts = pc.value_counts(data.column("namespace").combine_chunks())
        return {str(v["values"]): int(v["counts"]) for v in counts.to_pylist()}

    def count(self) -> int:
        """Non-deleted memories in total."""
        table = self._open()
        return 0 if table is None else int(table.count_rows("is_deleted = false"))

    def close(self) -> None:
        with self._lock:
            self._table = None
            self._db = None
        if self._atable is not None:
            self._atable.close()
        if self._adb is not None:
            self._adb.close()
        self._atable = self._adb = None
