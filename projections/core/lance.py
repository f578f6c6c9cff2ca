"""LanceDB plumbing shared by the LanceDB projectors (the async API, one writer per table).

- `sql_quote` / `sql_in` build filter literals safely (single quotes doubled).
- `WriterLock` makes a projection directory single-writer (an exclusive `flock`), so two
  projector instances can never interleave batches into one table.
- `LanceTable` wraps one table: lazy open/create, fetch by filter, keyed lookups that stay
  cheap however many small fragments accumulate (index-only search plus the writer's own
  record of unindexed keys), batch writes (append when every row is new, otherwise one
  `merge_insert` upsert), the BTree index on the key, Bitmap indexes on low-cardinality filter
  columns (they halve the cost of a prefiltered vector search), `optimize`, version-pinned scans.
"""

from __future__ import annotations

import fcntl
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Iterable, Literal, overload

import lancedb
import numpy as np
import pyarrow as pa
import structlog
from lancedb.index import FTS, BTree, Bitmap, HnswSq

from projections.core.errors import ProjectionBusy

log = structlog.get_logger(__name__)

IN_CHUNK = 1000  # literals per `IN (...)` filter
#: Keys written since the key's index last covered every row, past which it is built again (see `_reindex_key`).
REINDEX_TAIL = 20_000


def sql_quote(value: str) -> str:
    """A SQL string literal for a LanceDB filter (single quotes doubled)."""
    return "'" + str(value).replace("'", "''") + "'"


def sql_in(column: str, values: Iterable[str]) -> str:
    return f"{column} IN ({', '.join(sql_quote(v) for v in values)})"


def vectors_to_arrow(vectors: np.ndarray, dim: int, value_type: pa.DataType = pa.float32()) -> pa.FixedSizeListArray:
    """Rows of `vectors` as a fixed-size list column of `value_type` (float32, or float16: half the bytes)."""
    dtype = value_type.to_pandas_dtype()
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).astype(dtype, copy=False).reshape(-1),
                    type=value_type)
    return pa.FixedSizeListArray.from_arrays(flat, dim)


def vectors_from_arrow(column: pa.ChunkedArray | pa.Array, dim: int) -> np.ndarray:
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if len(arr) == 0:
        return np.zeros((0, dim), dtype=np.float32)
    return arr.flatten().to_numpy(zero_copy_only=False).astype(np.float32).reshape(-1, dim)


class WriterLock:
    """An exclusive, non-blocking `flock` on `<directory>/.writer.lock` (released on close/exit)."""

    FILENAME = ".writer.lock"

    def __init__(self, directory: Path) -> None:
        self.path = directory / self.FILENAME
        self._fd: int | None = None

    def acquire(self) -> None:
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ProjectionBusy(f"another projector is writing {self.path.parent}") from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


class LanceTable:
    """One LanceDB table under `directory`, opened lazily with the async API."""

    def __init__(self, directory: Path, name: str, schema: pa.Schema | Callable[[], pa.Schema],
                 key: str = "id", bitmap_columns: tuple[str, ...] = (),
                 fts_columns: dict[str, dict[str, Any]] | None = None, track_keys: bool = False) -> None:
        self.directory = directory
        self.name = name
        self._schema = schema  # a callable defers e.g. asking an HTTP embedder for its dimension
        self.key = key
        self.bitmap_columns = bitmap_columns
        self.fts_columns = fts_columns or {}  # column -> lancedb.index.FTS options
        self._db: Any = None
        self._table: Any = None
        self._indexed = False
        self._tail: set[str] | None = None  # keys written since the last optimize (unindexed)
        self._tail_checked = False
        # every key in the table, when `track_keys` and this instance made the table (a rebuild's): lookups
        # of keys it lacks are not made (most keys a rebuild looks up are new)
        self.track_keys = track_keys
        self._keys: set[str] | None = None

    @property
    def schema(self) -> pa.Schema:
        return self._schema if isinstance(self._schema, pa.Schema) else self._schema()

    async def _connect(self) -> Any:
        if self._db is None:
            self._db = await lancedb.connect_async(str(self.directory))
        return self._db

    async def exists(self) -> bool:
        if self._table is not None:
            return True
        if not (self.directory / f"{self.name}.lance").exists():
            return False
        return await self.open() is not None

    @overload
    async def open(self, *, create: Literal[True]) -> Any: ...
    @overload
    async def open(self, *, create: bool = False) -> Any | None: ...

    async def open(self, *, create: bool = False) -> Any | None:
        """The table handle; None when it does not exist (and `create` is False)."""
        if self._table is not None:
            return self._table
        db = await self._connect()
        names = (await db.list_tables()).tables
        if self.name in names:
            self._table = await db.open_table(self.name)
        elif create:
            self._table = await db.create_table(self.name, schema=self.schema)
            self._tail = set()  # empty and ours: every key written from now on is tracked
            self._keys = set() if self.track_keys else None
        return self._table

    async def version(self) -> int | None:
        table = await self.open()
        return None if table is None else int(await table.version())

    async def latest_version(self) -> int | None:
        """The newest committed version on disk (refreshes a handle another process may be behind)."""
        if not await self.exists():
            return None
        await self._table.checkout_latest()
        return int(await self._table.version())

    async def restore(self, version: int) -> int:
        """Make `version` the latest again (a new commit with its content); returns the new version."""
        table = await self.open()
        assert table is not None
        await table.checkout(version)
        await table.restore()
        self._tail, self._tail_checked = None, False  # the rolled-back keys are gone
        self._keys = None
        return int(await table.version())

    async def count(self) -> int:
        table = await self.open()
        return 0 if table is None else int(await table.count_rows())

    async def truncate(self) -> int:
        """Delete every row (a new commit); returns the new version."""
        table = await self.open()
        assert table is not None
        await table.delete("true")
        self._tail = set()
        self._keys = set() if self.track_keys else None
        return int(await table.version())

    async def fetch(self, where: str, columns: list[str] | None = None, *, indexed_only: bool = False) -> pa.Table:
        table = await self.open()
        if table is None:
            return self.schema.empty_table()
        q = table.query().where(where)
        if indexed_only:
            q = q.fast_search()  # skip fragments the index does not cover yet
        if columns is not None:
            q = q.select(columns)
        result = await q.to_arrow()
        return result.select(columns) if columns is not None else result

    async def fetch_keys(self, keys: list[str], columns: list[str] | None = None) -> pa.Table:
        """Rows whose key is in `keys` (`columns` of them: every one by default).

        Written keys not yet covered by the BTree index (the "tail" since the last `optimize`)
        are known to this writer, so the others are looked up through the index alone
        (`fast_search`): the cost does not grow with the number of small fragments. When the
        tail is unknown (another instance wrote last), every lookup scans the unindexed part.
        """
        if self._keys is not None:
            keys = [k for k in keys if k in self._keys]
        tail = await self._known_tail()
        slow = keys if tail is None else [k for k in keys if k in tail]
        fast = [] if tail is None else [k for k in keys if k not in tail]
        columns = columns or self.schema.names  # named: index-only searches add a `_rowid` column otherwise
        parts = [await self.fetch(sql_in(self.key, group[i:i + IN_CHUNK]), columns, indexed_only=indexed)
                 for group, indexed in ((fast, True), (slow, False))
                 for i in range(0, len(group), IN_CHUNK)]
        parts = [p for p in parts if p.num_rows]
        if not parts:
            return self.schema.empty_table().select(columns)
        if len(parts) == 1:
            return parts[0]
        return pa.concat_tables(parts, promote_options="permissive")

    async def _known_tail(self) -> set[str] | None:
        if self._tail is None and not self._tail_checked:
            self._tail_checked = True  # once per instance: is everything already indexed?
            if await self._unindexed_rows() == 0:
                self._tail = set()
        return self._tail

    async def _unindexed_rows(self) -> int | None:
        table = await self.open()
        if table is None:
            return None
        for ix in await table.list_indices():
            if list(ix.columns) == [self.key]:
                stats = await table.index_stats(ix.name)
                return None if stats is None else int(stats.num_unindexed_rows)
        return None

    async def write(self, data: pa.Table, *, upsert: bool) -> int:
        """Append (every key new) or upsert by key in one commit; returns the new table version."""
        table = await self.open(create=True)
        if upsert:
            await (table.merge_insert(self.key).when_matched_update_all()
                   .when_not_matched_insert_all().execute(data))
        else:
            await table.add(data)
        written = data.column(self.key).to_pylist()
        if self._tail is not None:
            self._tail.update(written)
        if self._keys is not None:
            self._keys.update(written)
        await self._ensure_index(table)
        if self._tail is not None and len(self._tail) >= REINDEX_TAIL:
            await self._reindex_key(table)
        # the version after any index built just now: a checkpoint naming the pre-index version would
        # make the next writer's recovery roll the index back (and rebuild it)
        return int(await table.version())

    async def replace(self, data: pa.Table, existing: list[str]) -> int:
        """The rows of keys `existing` deleted, then every row of `data` appended: two commits, ~2.5x
        cheaper than `write(upsert=True)` at 150k rows, but a reader of the latest version between the
        two misses those rows, so only for a table nobody reads while it is written (a rebuild). A
        crash between the two is rolled back like any write past the checkpoint. The new version."""
        table = await self.open(create=True)
        for i in range(0, len(existing), IN_CHUNK):
            await table.delete(sql_in(self.key, existing[i:i + IN_CHUNK]))
        return await self.write(data, upsert=False)

    async def _reindex_key(self, table: Any) -> None:
        """The key's BTree rebuilt over every row: lookups of the tail's keys scan the unindexed rows (a
        rebuild, which never optimizes, wrote them all: ~0.25 s a batch at 110k rows, growing), while
        the rebuild costs ~0.03 s at 120k rows. The rows are unchanged (a new version, as any index)."""
        started = time.perf_counter()
        await table.create_index(self.key, config=BTree(), replace=True)
        log.debug("lance.key_reindexed", table=self.name, tail=len(self._tail or ()),
                  ms=round((time.perf_counter() - started) * 1000, 1))
        self._tail = set()

    async def _ensure_index(self, table: Any) -> None:
        """A BTree scalar index on the key and the Bitmap ones, created once the table has rows."""
        if self._indexed:
            return
        indexed = {tuple(ix.columns) for ix in await table.list_indices()}
        if (self.key,) not in indexed:
            await table.create_index(self.key, config=BTree())
            self._tail = set()  # a new index covers every row written so far
            log.info("lance.index_created", table=self.name, column=self.key, index="btree")
        for column in self.bitmap_columns:
            if (column,) not in indexed:
                await table.create_index(column, config=Bitmap())
                log.info("lance.index_created", table=self.name, column=column, index="bitmap")
        for column, options in self.fts_columns.items():
            if (column,) not in indexed:
                await table.create_index(column, config=FTS(**options))
                log.info("lance.index_created", table=self.name, column=column, index="fts")
        self._indexed = True

    async def ensure_vector_index(self, column: str, min_rows: int) -> bool:
        """An HNSW (scalar-quantised, cosine) index on `column` once the table has `min_rows` rows.

        Created once; `optimize` folds later rows into it, and rows it does not cover yet are
        still searched exhaustively, so results never miss fresh writes. True when it exists.
        """
        table = await self.open()
        if table is None:
            return False
        if any(list(ix.columns) == [column] for ix in await table.list_indices()):
            return True
        rows = int(await table.count_rows())
        if rows < min_rows:
            return False
        await table.create_index(column, config=HnswSq(distance_type="cosine"))
        log.info("lance.index_created", table=self.name, column=column, index="hnsw_sq", rows=rows)
        return True

    async def optimize(self, cleanup_older_than: timedelta) -> tuple[Any, int | None]:
        """Compact fragments, fold new rows into indexes, prune old versions; (stats, version)."""
        table = await self.open()
        if table is None:
            return None, None
        await self._ensure_index(table)  # e.g. a directory built offline, now served
        stats = await table.optimize(cleanup_older_than=cleanup_older_than)
        self._tail = set() if await self._unindexed_rows() == 0 else None
        return stats, int(await table.version())

    async def scan(self, columns: list[str], version: int | None = None) -> pa.Table:
        """All rows (selected columns) at `version` (latest when None or no longer kept)."""
        table = await self.open()
        if table is None:
            return self.schema.empty_table().select(columns)
        if version is not None:
            try:
                pinned = await self._db.open_table(self.name, version=version)
            except Exception as exc:  # noqa: BLE001 - pruned or unknown version
                log.warning("lance.version_gone", table=self.name, version=version, error=str(exc))
            else:
                try:
                    return await pinned.query().select(columns).to_arrow()
                finally:
                    pinned.close()
        await table.checkout_latest()
        return await table.query().select(columns).to_arrow()

    async def readable_at(self, version: int) -> bool:
        """Whether every row of `version` can be read (its manifest and data files all present):
        the key column scanned, strictly at that version (no fallback to the latest)."""
        db = await self._connect()
        try:
            pinned = await db.open_table(self.name, version=version)
        except Exception:  # noqa: BLE001 - pruned or unknown version
            return False
        try:
            await pinned.query().select([self.key]).to_arrow()
            return True
        except Exception:  # noqa: BLE001 - a data file of the version is missing
            return False
        finally:
            pinned.close()

    async def close(self) -> None:
        if self._table is not None:
            self._table.close()
            self._table = None
        if self._db is not None:
            self._db.close()
            self._db = None
        self._indexed = False
        self._tail, self._tail_checked = None, False
        self._keys = None
