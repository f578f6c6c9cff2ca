"""The serving index: the memories projection held in memory for recall.

LanceDB is the durable read model; at 100k memories its per-query overheads (delta segments of
every index, a filtered full-text search, a row fetch) cost 30-40 ms of CPU per recall. This
index keeps, per namespace, the live rows' result columns, their vectors
(:mod:`projections.serving.dense`) and a BM25 index of their `search_text`
(:mod:`projections.serving.bm25`), so a recall costs a few milliseconds.

It is a cache *of the projection*, never of the log: it loads the table as of the projector's
checkpoint (the table version recorded there), then follows the checkpoint file, reading only
the rows whose `position` moved past what it holds. :meth:`refresh` brings it up to the
checkpoint the file names at the time of the call, so a reader that waited for a position (or
read a cache generation) before calling it never sees an older state. Until the first load (or
a reload: the projection was rebuilt, or more than `BIG_DELTA` rows changed at once) is done,
:meth:`refresh` answers False and recall reads LanceDB directly. A load runs in worker threads,
in two passes (ids and positions fix each row's slot; then the rows come in batches, straight
into their slots), and hands the freed heap back to the OS.

Memory (`tests/bench/serving_memory.py`): per live memory about 1.3 KB plus its text at 512
dims: an int8 vector with its scale (:mod:`projections.serving.vectors`), the row as one
record in a byte arena (:mod:`projections.serving.rows`), BM25 postings in flat arrays, and
once partitioned the reduced row (4 bytes a reduced dimension) and a list slot.
"""
from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import structlog

from events import positions
from projections.core import checkpoint as checkpoint_file
from projections.core.checkpoint import Checkpoint
from projections.serving.bm25 import BM25Params
from projections.memories.schema import SEARCH_TEXT
from projections.memories.reader import RESULT_COLUMNS, _checked
from projections.core.heap import freeze_long_lived, give_back_freed_memory
from projections.serving.locations import Locations, slots_by_commit
from projections.serving.partition import Partition
from projections.serving.table_at import LOAD_BATCH, LOAD_COLUMNS, TableAt
from projections.serving.topk import best_first
from projections.text.lexical import terms
from projections.serving.dense import IvfParams, pooled_top

log = structlog.get_logger(__name__)

BIG_DELTA = 50_000  # more changed rows than this since the last refresh: reload instead of applying them


@dataclass(slots=True)
class _State:
    parts: dict[str, Partition] = field(default_factory=dict)
    where: Locations = field(default_factory=Locations)   # memory id -> (namespace, slot)
    position: str | None = None
    table_version: int | None = None


class ServingIndex:
    def __init__(self, directory: Path, *, bm25: BM25Params = BM25Params(), ivf: IvfParams = IvfParams()) -> None:
        self.directory = Path(directory)
        self._checkpoint_path = str(self.directory / checkpoint_file.FILENAME)  # stat'ed by every recall
        self.bm25 = bm25
        self.ivf = ivf
        self._state: _State | None = None
        self._sig: tuple[int, int, int] | None = None    # checkpoint file (mtime, size, inode) last synced
        self._lock = asyncio.Lock()
        self._loading: asyncio.Task | None = None
        self._training: set[asyncio.Task] = set()
        self._table = TableAt(self.directory)
        self._unfrozen = 0     # rows applied since the index's objects were last frozen (heap.freeze_long_lived)

    # ------------------------------------------------------------------ sync

    @property
    def ready(self) -> bool:
        return self._state is not None

    @property
    def position(self) -> str | None:
        """The memories checkpoint the index reflects (None while it loads)."""
        state = self._state
        return state.position if state is not None else None

    def _file_sig(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self._checkpoint_path)
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    async def refresh(self) -> bool:
        """Bring the index up to the projection's current checkpoint; False while it is (re)loading."""
        if self._state is not None and self._file_sig() == self._sig:
            return True
        async with self._lock:
            sig = self._file_sig()
            state = self._state
            if state is not None and sig == self._sig:
                return True
            if state is None:
                self._start_load()
                return False
            ck = await asyncio.to_thread(checkpoint_file.load, self.directory)
            if ck is None or _went_back(ck, state):
                log.warning("serving_index.reload", reason="projection rebuilt or removed",
                            held=state.position, checkpoint=ck.position if ck else None)
                self._state = None
                self._start_load()
                return False
            if ck.position != state.position:
                if ck.table_version != state.table_version and not await self._apply_delta(state, ck):
                    log.info("serving_index.reload", reason=f"more than {BIG_DELTA} rows changed",
                             held=state.position, checkpoint=ck.position)
                    self._state = None
                    self._start_load()
                    return False
                state.position, state.table_version = ck.position, ck.table_version
            self._sig = sig
            self._schedule_training(state)
            return True

    async def wait_ready(self, timeout_s: float = 120.0) -> bool:
        """Start (or join) the load and wait for it; True once the index serves."""
        if await self.refresh():
            return True
        if self._loading is not None:
            await asyncio.wait_for(asyncio.shield(self._loading), timeout_s)
        return await self.refresh()

    def _start_load(self) -> None:
        if self._loading is None or self._loading.done():
            self._loading = asyncio.create_task(self._load(), name="serving_index:load")

    async def _load(self) -> None:
        try:
            sig = self._file_sig()
            ck = await asyncio.to_thread(checkpoint_file.load, self.directory)
            state = _State(position=ck.position if ck else None, table_version=ck.table_version if ck else None)
            table = await self._table.open(ck)
            if table is not None:
                assert ck is not None and ck.position is not None
                try:
                    await self._bulk_load(state, table, ck.position)
                finally:
                    table.close()
            async with self._lock:
                self._state, self._sig = state, sig
            await asyncio.to_thread(give_back_freed_memory)
            freeze_long_lived()
            log.info("serving_index.loaded", rows=len(state.where), namespaces=len(state.parts),
                     position=state.position)
            await self.refresh()  # catch up with what the projector wrote meanwhile
        except Exception:  # noqa: BLE001 - recall keeps reading LanceDB; the next refresh retries
            log.exception("serving_index.load_failed")

    async def _bulk_load(self, state: _State, table: Any, position: str) -> None:
        """The first load, without ever holding the whole table as Python rows: pass 1 reads the
        ids, namespaces and positions and gives each live row its slot (commit order within its
        namespace); pass 2 streams the rows in batches into their slots; then each partition
        links its context neighbours and trains its IVF."""
        await table.checkout(await table.version())  # both passes read one version
        keys = await table.query().where("is_deleted = false").select(["id", "namespace", "position"]).to_arrow()
        order = await asyncio.to_thread(slots_by_commit, keys, positions.key(position))
        del keys
        agents: dict[str, list[str]] = {}
        stamps: dict[str, list[int]] = {}
        for ns, ids in order.items():
            agents[ns], stamps[ns] = [""] * len(ids), [0] * len(ids)
            for slot, mid in enumerate(ids):
                state.where[mid] = (ns, slot)
        reader = await table.query().where("is_deleted = false").select(LOAD_COLUMNS).to_batches(
            max_batch_length=LOAD_BATCH)
        async for batch in reader:
            await asyncio.to_thread(self._place, state, order, agents, stamps, pa.Table.from_batches([batch]))
        for ns, part in state.parts.items():
            await asyncio.to_thread(part.link_all, agents[ns], stamps[ns])
            if part.wants_ivf(self.ivf):
                part.ivf = await asyncio.to_thread(part.train, self.ivf)

    def _place(self, state: _State, order: dict[str, list[str]], agents: dict[str, list[str]],
               stamps: dict[str, list[int]], data: pa.Table) -> None:
        dim = data.schema.field("vector").type.list_size
        vectors = data.column("vector").combine_chunks().values.to_numpy(zero_copy_only=False)
        vectors = vectors.reshape(data.num_rows, dim).astype(np.float32, copy=False)
        texts = data.column(SEARCH_TEXT).to_pylist()
        agent_ids = data.column("agent_id").to_pylist()
        episodes = data.column("derived_from").to_pylist()
        stamp = data.column("position").to_pylist()
        for i, row in enumerate(data.select(RESULT_COLUMNS).to_pylist()):
            at = state.where.get(row["id"])
            if at is None:
                continue  # after the checkpoint: the next refresh brings it
            ns, slot = at
            row["id"] = order[ns][slot]   # the string the locations hold: one copy of each id, not two
            part = state.parts.get(ns)
            if part is None:
                part = state.parts[ns] = Partition(ns, dim, self.bm25)
                part.reserve(len(order[ns]))
            part.place(slot, row, vectors[i], terms(texts[i] or ""), episodes[i] or "")
            agents[ns][slot] = sys.intern(agent_ids[i] or "")
            stamps[ns][slot] = positions.key(stamp[i])[0]

    async def _apply_delta(self, state: _State, ck: Checkpoint) -> bool:
        """Apply the rows changed since what the index holds; False (nothing applied) when they
        are more than BIG_DELTA: a reload (in worker threads) then beats folding them in here,
        on the event loop."""
        data = await self._table.changed(ck, state.position or "0-0", BIG_DELTA)
        if data is None:
            return True
        if data.num_rows > BIG_DELTA:
            return False
        self._apply_rows(state, data)
        if data.num_rows > LOAD_BATCH:
            await asyncio.to_thread(give_back_freed_memory)
        self._unfrozen += data.num_rows
        if self._unfrozen > LOAD_BATCH:   # many small deltas add as many objects as a big one
            freeze_long_lived()
            self._unfrozen = 0
        return True

    def _apply_rows(self, state: _State, data: pa.Table) -> None:
        if data.num_rows == 0:
            return
        dim = data.schema.field("vector").type.list_size
        vectors = data.column("vector").combine_chunks().values.to_numpy(zero_copy_only=False)
        vectors = vectors.reshape(data.num_rows, dim).astype(np.float32, copy=False)
        deleted = data.column("is_deleted").to_pylist()
        texts = data.column(SEARCH_TEXT).to_pylist()
        agents = data.column("agent_id").to_pylist()
        episodes = data.column("derived_from").to_pylist()
        keys = [positions.key(p) for p in data.column("position").to_pylist()]
        rows = data.select(RESULT_COLUMNS).to_pylist()
        touched: set[str] = set()
        for i in sorted(range(len(rows)), key=keys.__getitem__):  # commit order orders context neighbours
            row = rows[i]
            row["id"] = sys.intern(row["id"])   # as a load's: shared with the followers
            old = state.where.get(row["id"])
            if old is not None and not deleted[i] and old[0] == row["namespace"]:
                part = state.parts[old[0]]
                if part.live[old[1]] and part.rows.content(old[1]) == row["content"]:
                    part.rows.replace(old[1], row)  # same text: update in place (keeps its slot and context)
                    continue
            old = state.where.pop(row["id"])
            if old is not None:
                state.parts[old[0]].remove(old[1])
                touched.add(old[0])
            if deleted[i]:
                continue
            ns = row["namespace"]
            home = state.parts.get(ns)
            if home is None:
                home = state.parts[ns] = Partition(ns, dim, self.bm25)
            replacing = old[1] if old is not None and old[0] == ns else None  # a new text keeps its place
            state.where[row["id"]] = (ns, home.add(row, vectors[i], terms(texts[i] or ""), agents[i], keys[i][0],
                                                   episodes[i] or "", replacing=replacing))
        for ns in touched:
            if state.parts[ns].wants_compaction():
                state.parts[ns] = self._compacted(state, state.parts[ns])
                freeze_long_lived()

    def _compacted(self, state: _State, old: Partition) -> Partition:
        new, moved = old.compacted()
        for slot in moved.values():
            state.where[new.ids[slot]] = (old.namespace, slot)
        return new

    def _schedule_training(self, state: _State) -> None:
        for part in state.parts.values():
            if part.wants_ivf(self.ivf):
                part.training = True
                task = asyncio.create_task(self._train(part), name=f"serving_index:ivf:{part.namespace}")
                self._training.add(task)
                task.add_done_callback(self._training.discard)

    async def _train(self, part: Partition) -> None:
        try:
            part.ivf = await asyncio.to_thread(part.train, self.ivf)
            log.info("serving_index.ivf_built", namespace=part.namespace, rows=part.ivf.covered,
                     lists=len(part.ivf.centroids))
        except Exception:  # noqa: BLE001 - exact search keeps working
            log.exception("serving_index.ivf_failed", namespace=part.namespace)
        finally:
            part.training = False

    # ------------------------------------------------------------------ reads (MemoriesReader's recall API)

    def _parts(self, namespaces: list[str]) -> list[Partition]:
        state = self._state
        if state is None:
            return []
        return [p for ns in namespaces if (p := state.parts.get(ns)) is not None]

    def holds(self, namespaces: list[str]) -> bool:
        """Whether any of `namespaces` holds a live memory."""
        return any(p.live_count for p in self._parts(namespaces))

    async def adense(self, vector: np.ndarray, namespaces: list[str], limit: int) -> list[tuple[str, float]]:
        ns = _checked(namespaces, limit)
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        parts = self._parts(ns)
        hits: list[tuple[str, float]] = []
        pooled = []
        for p in parts:
            coarse = p.dense_coarse(q, limit, self.ivf) if len(parts) > 1 else None
            if coarse is None:
                hits += [(p.ids[slot], cos) for slot, cos in p.dense(q, limit, self.ivf)]
            else:
                pooled.append((p, *coarse))
        if pooled:
            best = pooled_top([(p.vectors, cand, approx) for p, cand, approx in pooled], q, limit,
                              max(self.ivf.rerank, 4 * limit))
            hits += [(p.ids[slot], cos) for (p, _, _), found in zip(pooled, best) for slot, cos in found]
        best_first(hits)
        return [(i, min(1.0, max(-1.0, c))) for i, c in hits[:limit]]

    async def alexical(self, text: str, namespaces: list[str], limit: int, *,
                       context: float = 0.0) -> list[tuple[str, float]]:
        ns = _checked(namespaces, limit)
        query_terms = terms(text)
        if not query_terms:
            return []
        hits = [(p.ids[slot], score) for p in self._parts(ns)
                for slot, score in p.lexical_search(query_terms, limit, context)]
        best_first(hits)
        return hits[:limit]

    async def arows(self, ids: list[str], *, vectors: bool = False,
                    columns: list[str] = RESULT_COLUMNS) -> dict[str, dict[str, Any]]:
        state = self._state
        if state is None:
            return {}
        out = {}
        wanted: dict[str, tuple[list[dict[str, Any]], list[int]]] = {}   # namespace -> rows, slots
        for mid in ids:
            at = state.where.get(mid)
            if at is None:
                continue
            row = state.parts[at[0]].rows.get(at[1], mid)
            if row is None:
                continue
            got = row if _whole(row, columns) else {c: row[c] for c in columns if c in row}
            if vectors:
                rows_slots = wanted.setdefault(at[0], ([], []))
                rows_slots[0].append(got)
                rows_slots[1].append(at[1])
            out[mid] = got
        for ns, (rows, slots) in wanted.items():   # each namespace's vectors decoded at once (same values)
            for got, vector in zip(rows, state.parts[ns].vectors.take(np.array(slots, dtype=np.int64))):
                got["vector"] = vector
        return out

    def stats(self) -> dict[str, Any]:
        state = self._state
        if state is None:
            return {"ready": False}
        return {"ready": True, "position": state.position, "rows": len(state.where),
                "namespaces": {ns: {"rows": p.live_count, "ivf_lists": len(p.ivf.centroids) if p.ivf else 0}
                               for ns, p in state.parts.items()}}

    async def close(self) -> None:
        for task in [*self._training, *([self._loading] if self._loading else [])]:
            task.cancel()
        await asyncio.gather(*self._training, *([self._loading] if self._loading else []),
                             return_exceptions=True)
        self._table.close()
        self._state = None


def _whole(row: dict[str, Any], columns: list[str]) -> bool:
    """A row decoded from the arena is a fresh dict of exactly RESULT_COLUMNS: no copy needed."""
    return columns is RESULT_COLUMNS and len(row) == _N_RESULT and row.keys() == _RESULT_SET


_RESULT_SET = frozenset(RESULT_COLUMNS)
_N_RESULT = len(_RESULT_SET)


def _went_back(ck: Checkpoint, state: _State) -> bool:
    """The checkpoint is behind what the index holds: the projection was rebuilt."""
    if positions.key(ck.position) < positions.key(state.position):
        return True
    return (ck.table_version or 0) < (state.table_version or 0)
