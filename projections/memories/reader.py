"""Read access to the memories table for the gateway.

The recall hot path (`adense`, `alexical`, `arows`, `abootstrap`) uses LanceDB's async API on
the caller's event loop; the other reads are sync (call them via `asyncio.to_thread`). Both connections are opened with
`read_consistency_interval=timedelta(0)`, so every read sees the latest version the
projector committed, even from another process. A table that does not exist yet reads as
empty. Namespaces are validated and quoted before they reach a filter.
"""

from __future__ import annotations

import re
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

import lancedb
import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import structlog

from projections.core.errors import InvalidQuery
from projections.core.lance import sql_in, sql_quote
from projections.core.lance_session import SEARCH_READS, CacheBounds
from projections.memories.schema import SCALAR_COLUMNS, SEARCH_TEXT, TABLE

log = structlog.get_logger(__name__)

NAMESPACE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
SEARCH_COLUMNS = [c for c in SCALAR_COLUMNS if c not in ("version_history", SEARCH_TEXT)]
# What a recall result shows: fetching fewer columns per candidate halves the cost of `arows`.
RESULT_COLUMNS = ["id", "content", "namespace", "category", "tags", "source", "version", "timestamp", "freshness",
                  "volatile_flag", "tier", "decay_class", "importance", "quality_score", "confidence", "updated_at",
                  "status", "quality_notice_at", "conflicts", "agent_id", "extractor"]
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


def _cosines(query: np.ndarray, vectors: Any) -> np.ndarray:
    """The cosine of `query` with each row of a vector column (float32 or float16), computed here:
    LanceDB's `_distance` is the cosine distance on a flat search but twice that (the squared L2 of
    unit vectors) through its IVF-HNSW-SQ index."""
    arr = vectors.combine_chunks() if hasattr(vectors, "combine_chunks") else vectors
    if len(arr) == 0:
        return np.zeros(0, dtype=np.float32)
    mat = arr.values.to_numpy(zero_copy_only=False).reshape(len(arr), -1).astype(np.float32)
    norms = np.linalg.norm(mat, axis=1) * (float(np.linalg.norm(query)) or 1.0)
    return np.clip(mat @ query / np.where(norms > 0, norms, 1.0), -1.0, 1.0)


def _scored(query: np.ndarray, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cosine similarity `score` (from each row's vector, dropped), JSON columns decoded, best first
    (ties by id)."""
    if rows:
        cos = _cosines(query, pa.array([r.pop("vector") for r in rows], type=pa.list_(pa.float32())))
        for row, c in zip(rows, cos):
            row.pop("_distance", None)
            row["score"] = float(c)
            _shape(row)
    rows.sort(key=lambda r: (-r["score"], r["id"]))
    return rows


class MemoriesReader:
    reads: ClassVar[tuple[str, ...]] = ("memories",)   # the projection to wait for (read-your-writes)

    def __init__(self, directory: Path, cache: CacheBounds = SEARCH_READS) -> None:
        self.directory = Path(directory)
        self._db: Any = None
        self._table: Any = None
        self._lock = threading.Lock()
        self.session = cache.session()   # both connections: a new version at every read, bounded caches
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
                    self._db = lancedb.connect(str(self.directory), read_consistency_interval=timedelta(0),
                                               session=self.session)
                try:
                    self._table = self._db.open_table(TABLE)
                except ValueError:  # "Table 'memories' was not found" (being created)
                    return None
        return self._table

    def table(self) -> Any | None:
        """The sync table handle (None while the table does not exist), for other read modules."""
        return self._open()

    def search(self, vector: np.ndarray, namespaces: list[str], limit: int) -> list[dict[str, Any]]:
        """Nearest non-deleted memories in `namespaces`; each row has `score` = cosine similarity."""
        ns = _checked(namespaces, limit)
        table = self._open()
        if table is None or not ns:
            return []
        query = _as_query(vector)
        rows = (table.search(query, vector_column_name="vector")
                .distance_type("cosine")
                .where(_search_filter(ns), prefilter=True)
                .select([*SEARCH_COLUMNS, "vector", "_distance"])
                .limit(limit)
                .to_list())
        return _scored(query, rows)

    async def adense(self, vector: np.ndarray, namespaces: list[str], limit: int) -> list[tuple[str, float]]:
        """(id, cosine) of the nearest non-deleted memories in `namespaces`, best first.

        Ids only: materialising whole rows costs far more than the search itself, so the recall
        pipeline fetches rows (`arows`) just for the candidates that survive fusion.
        """
        ns = _checked(namespaces, limit)
        table = await self._aopen()
        if table is None or not ns:
            return []
        query = _as_query(vector)
        data = await (table.vector_search(query).column("vector").distance_type("cosine")
                      .where(_search_filter(ns))  # a prefilter in the async API
                      .select(["id", "vector", "_distance"]).limit(limit).to_arrow())
        cos = _cosines(query, data.column("vector"))
        hits = list(zip(data.column("id").to_pylist(), (float(c) for c in cos)))
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits

    async def alexical(self, text: str, namespaces: list[str], limit: int, *,
                       context: float = 0.0) -> list[tuple[str, float]]:
        """(id, BM25) full-text hits on `search_text`, best first.

        `context` (neighbour smoothing) is a feature of the serving index only; LanceDB's own
        search, used while that index loads, ignores it.

        `text` is already in the index's token form (`projections.text.lexical.query_text`). A table
        without the FTS index yet (no rows written by this build) has no lexical hits.
        """
        ns = _checked(namespaces, limit)
        if not text.strip():
            return []
        table = await self._aopen()
        if table is None or not ns:
            return []
        try:
            data = await (table.query().nearest_to_text(text, columns=SEARCH_TEXT).where(_search_filter(ns))
                          .select(["id", "_score"]).limit(limit).to_arrow())
        except (RuntimeError, ValueError) as exc:  # no FTS index (yet): lexical search unavailable
            log.warning("reader.fulltext_unavailable", error=str(exc)[:200])
            return []
        hits = list(zip(data.column("id").to_pylist(), (float(x) for x in data.column("_score").to_pylist())))
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits

    async def arows(self, ids: list[str], *, vectors: bool = False,
                    columns: list[str] = RESULT_COLUMNS) -> dict[str, dict[str, Any]]:
        """The rows (`columns`, plus `vector` as a float32 array when asked) of `ids`."""
        table = await self._aopen()
        if table is None or not ids:
            return {}
        columns = [*columns, "vector"] if vectors else list(columns)
        data = await table.query().where(sql_in("id", ids)).select(columns).to_arrow()
        mat = None
        if vectors and data.num_rows:
            flat = data.column("vector").combine_chunks()
            mat = flat.values.to_numpy(zero_copy_only=False).reshape(data.num_rows, -1).astype(np.float32, copy=False)
        rows = data.drop_columns(["vector"]).to_pylist() if vectors else data.to_pylist()
        out = {}
        for i, row in enumerate(rows):
            if mat is not None:
                row["vector"] = mat[i]
            out[row["id"]] = _shape(row)
        return out

    async def aconstraints(self, limit: int = 200) -> list[dict[str, Any]]:
        """Live `constraint` memories outside `-ephemeral` namespaces (the world model's C, seed 6.6),
        newest first."""
        table = await self._aopen()
        if table is None:
            return []
        rows = await table.query().where("category = 'constraint' AND is_deleted = false AND status = 'active'") \
            .select(["id", "content", "namespace", "tags", "tier", "timestamp"]).to_list()
        rows = [r for r in rows if not str(r["namespace"]).endswith("-ephemeral")]
        rows.sort(key=lambda r: (r["timestamp"] or "", r["id"]), reverse=True)
        return rows[:limit]

    async def abootstrap(self, namespaces: list[str], limit: int) -> list[dict[str, Any]]:
        """Core facts for a cold-starting agent: tier=core first, then by importance, newest first."""
        ns = _checked(namespaces, limit)
        table = await self._aopen()
        if table is None or not ns:
            return []
        scope = _search_filter(ns)
        ranked = await table.query().where(scope).select(["tier", "importance", "timestamp", "id"]).to_arrow()
        if ranked.num_rows == 0:
            return []
        ranked = ranked.append_column("core", pc.equal(ranked["tier"], "core"))
        order = pc.sort_indices(ranked, sort_keys=[("core", "descending"), ("importance", "descending"),
                                                   ("timestamp", "descending"), ("id", "ascending")])
        ids = pc.take(ranked["id"], order[:limit]).to_pylist()
        if not ids:
            return []
        rows = await table.query().where(sql_in("id", ids)).select(SEARCH_COLUMNS).to_list()
        by_id = {r["id"]: _shape(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    async def aexists(self) -> bool:
        """Whether the table exists yet (a store with no memory committed has none)."""
        return await self._aopen() is not None

    async def _aopen(self) -> Any | None:
        if self._atable is not None:
            return self._atable
        if not (self.directory / f"{TABLE}.lance").exists():
            return None
        if self._adb is None:
            self._adb = await lancedb.connect_async(str(self.directory), read_consistency_interval=timedelta(0),
                                                    session=self.session)
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
