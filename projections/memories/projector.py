"""The memories projector: `memory.*` events -> the LanceDB table `memories` (seed 2.2).

One batch = one table commit: the batch is folded in memory (existing rows fetched with one
`id IN (...)` query), new contents are embedded in ONE `embedder.embed` call (in a thread),
the changed rows are written with one append (all new) or one `merge_insert("id")` upsert (an
offline rebuild, which nobody reads meanwhile, deletes the changed rows and appends them: two
commits, 2.5-4x cheaper), and then the checkpoint file is written atomically. The checkpoint
records the table version it corresponds to, so `digest()` reads exactly the state as of the
checkpoint even while a batch is being written.

Effectively-once: events at or before the checkpoint are dropped, and an event is skipped
for a row whose stored `position` is already at or after it (a batch delivered again, or
replayed over rows whose checkpoint was lost, changes nothing). After a crash between the
rows and the checkpoint, the next writer first rolls the table back to the checkpointed
version (`restore`), so the table is always exactly the state as of its checkpoint.

Single writer per directory (`flock`); readers (`projections.memories.reader`, digests) may be anywhere.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import timedelta
from itertools import islice
from operator import itemgetter
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import structlog

from events.catalogue import MemoryCommitted
from events.envelope import Event
from projections.core.checkpoint import Checkpoint
from projections.core.digest import canonical, vector_token
from projections.core.errors import RebuildRequired
from projections.core.lance import LanceTable, WriterLock, vectors_from_arrow, vectors_to_arrow
from projections.core.lance_projection import Chunks, LanceProjection, column_values, digest_by_column
from projections.memories.fold import COLUMN_FIELDS, CRDT, fold
from projections.memories.schema import (
    FILTER_COLUMNS, SCALAR_COLUMNS, SCHEMA_VERSION, SEARCH_TEXT, TABLE, memories_schema, memory_ids_of, read_scope_of,
)
from projections.core.projector import RECALL_AUDIT, after_checkpoint, last_position
from projections.text.lexical import FTS_CONFIG

log = structlog.get_logger(__name__)

Row = dict[str, Any]
#: What folding into a stored row reads of it (`fold.state_of`, `fold.row_of`): the others are derived
#: again, and each column a fetch reads costs (~25% less at 600k rows than every column).
FOLD_COLUMNS = ["id", CRDT, "version_history", "position", "model", "vector", *COLUMN_FIELDS]


def _rounded(values: list[Any]) -> list[Any]:
    return [canonical(v) for v in values]


def _vector_tokens(table: pa.Table, order: pa.Array) -> Iterator[list[Any]]:
    for models, contents in zip(column_values("model")(table, order), column_values("content")(table, order)):
        yield [vector_token(m, c) for m, c in zip(models, contents)]


def _scalar_values(name: str) -> Chunks:
    """A scalar column's values, floats rounded here (as stored: a table's own types decide)."""
    def chunks(table: pa.Table, order: pa.Array) -> Iterator[list[Any]]:
        floating = pa.types.is_floating(table.schema.field(name).type)
        return column_values(name, _rounded if floating else None)(table, order)
    return chunks


#: What the digest is made of: the scalar columns in id order, and the vectors as [model, sha256(content)].
DIGEST_COLUMNS: dict[str, tuple[list[str], Chunks]] = {
    **{name: ([name], _scalar_values(name)) for name in SCALAR_COLUMNS}, "vector": (["model", "content"], _vector_tokens)}


class MemoriesProjector(LanceProjection):
    """Folds `memory.committed` / `memory.deleted` into LanceDB under `directory` (single writer)."""

    name = "memories"
    ignored_types = RECALL_AUDIT   # counted by the activity, graph and metrics projections only

    def __init__(self, directory: Path, embedder: Any, *, compact_after_writes: int = 100,
                 compact_after_rows: int = 5000, vector_index_min_rows: int = 5000, serving_indexes: bool = True,
                 retention: timedelta = timedelta(minutes=10), memo_limit: int = 8192, unread: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.directory = Path(directory)
        self.embedder = embedder
        self.compact_after_writes = compact_after_writes
        self.compact_after_rows = compact_after_rows  # rows written since the last optimize
        self.vector_index_min_rows = vector_index_min_rows
        self.retention = retention
        self.memo_limit = memo_limit
        # nobody reads the table while it is written (an offline rebuild): changed rows are replaced by a
        # delete and an append instead of a merge_insert (see LanceTable.replace)
        self.unread = unread
        self._schema: pa.Schema | None = None
        # Serving indexes (filters, full text) are skipped by offline rebuilds; a live projector
        # over the directory creates them on its first write.
        self._table = LanceTable(self.directory, TABLE, self._lazy_schema,
                                 bitmap_columns=FILTER_COLUMNS if serving_indexes else (),
                                 fts_columns={SEARCH_TEXT: FTS_CONFIG} if serving_indexes else None,
                                 track_keys=unread)
        self._lock = WriterLock(self.directory)
        self._init_checkpointing()
        self._writes_since_optimize = 0
        self._rows_since_optimize = 0
        self._memo: dict[str, np.ndarray] = {}  # content -> vector, filled by prepare()
        self._maintained = False  # the first maintain always runs (it adds missing serving indexes)
        self.clock = clock   # upkeep timing only, never folds
        self._prune_at: float | None = None  # when the versions the last optimize had to keep may go
        self._stored: pa.Schema | None = None  # the schema rows are written with (the table's own)

    # ------------------------------------------------------------------ identity

    def _lazy_schema(self) -> pa.Schema:
        if self._schema is None:
            self._schema = memories_schema(int(self.embedder.dim))
        return self._schema

    def _meta(self, *, complete: bool = True) -> dict[str, Any]:
        if not complete:  # checked before the embedding model is loaded
            return {"model": self.embedder.model_id, "schema": SCHEMA_VERSION}
        return {"model": self.embedder.model_id, "dim": int(self.embedder.dim), "schema": SCHEMA_VERSION}

    # ------------------------------------------------------------------ fold

    async def prepare(self, events: list[Event]) -> None:
        """Embed the new contents of an upcoming batch ahead of `apply` (runner overlap)."""
        ck = await self._current()
        texts = [e.data.content for e in after_checkpoint(events, ck.position if ck else None)
                 if isinstance(e.data, MemoryCommitted) and e.data.content not in self._memo]
        unique = list(dict.fromkeys(texts))
        if not unique:
            return
        vecs = await asyncio.to_thread(self.embedder.embed, unique)
        # a row each (a view would keep its whole batch's array alive until every row of it is gone)
        self._memo.update(zip(unique, (row.copy() for row in np.asarray(vecs, dtype=np.float32))))
        excess = len(self._memo) - self.memo_limit
        if excess > 0:
            for k in list(islice(self._memo, excess)):
                del self._memo[k]

    def read_scope(self, event: Event) -> str | None:
        """Changes to a memory (commit, correction, deprecation, feedback, forgetting, deletion, a merge,
        a conflict) change reads of its namespace(s); `recall.served` (which only counts) never does."""
        return read_scope_of(event)

    async def apply(self, events: list[Event]) -> None:
        if not events:
            return
        await self._recover()
        ck = await self._current()
        fresh = after_checkpoint(events, ck.position if ck else None)
        if not fresh:
            return
        started = time.perf_counter()
        folded = [e for e in fresh if memory_ids_of(e)]
        rows, existing = await self._fold(folded) if folded else ([], [])
        if rows:
            await self._embed_missing(rows)
            data = self._to_arrow(rows, await self._stored_schema())
            try:
                version: int | None = await (self._table.replace(data, existing) if self.unread and existing
                                             else self._table.write(data, upsert=bool(existing)))
            except BaseException:
                # a replace may have committed its delete: whoever applies next (a retry) first rolls the
                # table back to the checkpoint's version
                self._recovered = False
                raise
            self._writes_since_optimize += 1
            self._rows_since_optimize += len(rows)
        else:
            version = ck.table_version if ck is not None else await self._table.version()
        new = Checkpoint(self.name, last_position(fresh, ck.position if ck else None), version, self._meta())
        await self._checkpoint(new)
        log.debug("memories.applied", events=len(fresh), rows=len(rows), updated=len(existing),
                  position=new.position, ms=round((time.perf_counter() - started) * 1000, 1))
        if (self.compact_after_writes and self._writes_since_optimize >= self.compact_after_writes) or \
                (self.compact_after_rows and self._rows_since_optimize >= self.compact_after_rows):
            await self.maintain()

    async def _fold(self, events: list[Event]) -> tuple[list[Row], list[str]]:
        """Fold in memory; returns (changed rows, the ids of those already in the table)."""
        ids = list(dict.fromkeys(mid for e in events for mid in memory_ids_of(e)))
        existing = await self._fetch(ids)
        work: dict[str, Row] = dict(existing)
        changed: dict[str, None] = {}
        for e in events:
            for mid in memory_ids_of(e):
                row = fold(work.get(mid), e, self.embedder.model_id, mid)
                if row is None:  # redelivered (at or before the row's high-water), or an unknown memory
                    continue
                work[mid] = row
                changed[mid] = None
        rows = [work[m] for m in changed]
        return rows, [m for m in changed if m in existing]

    async def _fetch(self, ids: list[str]) -> dict[str, Row]:
        if not ids or not await self._table.exists():
            return {}
        table = await self._table.fetch_keys(ids, FOLD_COLUMNS)
        if table.num_rows == 0:
            return {}
        vecs = vectors_from_arrow(table.column("vector"), int(self.embedder.dim))
        rows = table.drop_columns(["vector"]).to_pylist()
        for row, vec in zip(rows, vecs):
            row["vector"] = vec
        return {r["id"]: r for r in rows}

    async def _embed_missing(self, rows: list[Row]) -> None:
        todo = [r for r in rows if r["vector"] is None]
        if not todo:
            return
        # what `prepare` embedded, taken before any await: the next batches' `prepare` (read ahead) may
        # evict entries from the memo meanwhile
        have = {r["content"]: self._memo[r["content"]] for r in todo if r["content"] in self._memo}
        need = list(dict.fromkeys(r["content"] for r in todo if r["content"] not in have))
        fresh: dict[str, np.ndarray] = {}
        if need:
            vecs = np.asarray(await asyncio.to_thread(self.embedder.embed, need), dtype=np.float32)
            if vecs.shape != (len(need), int(self.embedder.dim)):
                raise RebuildRequired(f"embedder returned {vecs.shape}, expected ({len(need)}, {self.embedder.dim})")
            fresh = dict(zip(need, vecs))
        for r in todo:
            r["vector"] = fresh[r["content"]] if r["content"] in fresh else have[r["content"]]
        for r in todo:
            self._memo.pop(r["content"], None)

    async def _stored_schema(self) -> pa.Schema:
        """The table's own schema (a table made before half-precision vectors keeps its float32 ones;
        a rebuild writes the compact form), or the current one for a table yet to be made."""
        if self._stored is None:
            table = await self._table.open()
            self._stored = await table.schema() if table is not None else self._lazy_schema()
        return self._stored

    def _to_arrow(self, rows: list[Row], schema: pa.Schema) -> pa.Table:
        arrays = []
        for f in schema:
            if f.name == "vector":
                arrays.append(vectors_to_arrow(np.stack([r["vector"] for r in rows]), int(self.embedder.dim),
                                               f.type.value_type))
            else:   # map(itemgetter): a third of a list comprehension's time, ~1 s of a 200k-event replay
                arrays.append(pa.array(list(map(itemgetter(f.name), rows)), type=f.type))
        return pa.Table.from_arrays(arrays, schema=schema)

    # ------------------------------------------------------------------ digest, upkeep

    async def digest(self) -> str:
        return (await self.digest_at())[0]

    async def digest_at(self) -> tuple[str, str | None]:
        """Digest of the rows as of the checkpoint (the table version it records), column-wise, and
        that checkpoint's position: consistent however fast a live writer moves on."""
        ck, scan = await self._checkpointed_scan(memories_schema(1))
        return await digest_by_column(scan, "id", DIGEST_COLUMNS), ck.position if ck else None

    def upkeep_due(self) -> bool:
        """Whether `maintain` has work though nothing was written since its last run: the versions that
        run kept (younger than `retention` then: the files of the fragments it compacted, the index
        files it replaced) are older than that now and can be pruned."""
        return self._prune_at is not None and self.clock() >= self._prune_at

    async def advance(self, position: str) -> None:
        """Skipping (recall audits only): the checkpoint moves; the versions the last `maintain`
        kept are pruned once they are due (the runner calls `maintain` only after writes)."""
        await super().advance(position)
        if self.upkeep_due():
            await self.maintain()

    async def maintain(self) -> None:
        """Compact, refresh the indexes (creating the vector index once the table is big enough),
        prune versions older than `retention` (and, one `retention` after a run that followed
        writes, once more: what that run had to keep); the digest is unchanged."""
        if not await self._table.exists():
            return
        idle = self._maintained and not self._writes_since_optimize
        if idle and not self.upkeep_due():
            return  # nothing written since the last run (e.g. only recall audits): nothing to compact
        await self._recover()
        ck = await self._current()
        before = await self._table.version()
        started = time.perf_counter()
        if self.vector_index_min_rows:
            await self._table.ensure_vector_index("vector", self.vector_index_min_rows)
        stats, version = await self._table.optimize(self.retention)
        # once more one retention later, unless an idle run changed nothing (no new version: nothing more kept)
        again = not idle or version != before
        self._prune_at = self.clock() + self.retention.total_seconds() + 1.0 if again else None
        self._writes_since_optimize = 0
        self._rows_since_optimize = 0
        self._maintained = True
        await self._keep_checkpoint_after_optimize(ck, before, version)
        log.info("memories.optimized", version=version, ms=round((time.perf_counter() - started) * 1000, 1),
                 stats=str(stats))

    async def close(self) -> None:
        await self._table.close()
        self._lock.release()
        self._recovered = False
        self._memo.clear()
        self._stored = None
