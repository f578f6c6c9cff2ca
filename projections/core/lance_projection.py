"""What every LanceDB projector shares: the checkpoint file (position + the table version it
corresponds to + build meta), refusing a projection built by another build, and crash recovery.

Rows are written first, then the checkpoint. After a crash between the two, the next writer rolls
the table back to the checkpointed version (`restore`; emptied, when the checkpoint predates the
table's first row) before folding anything, so the table is exactly the state as of its checkpoint
and the events after it are applied once. A checkpointed
version newer than the table (the table lost its last commits) is refused: rebuild from the log.
Subclasses set `name`, `directory`, `_table` (LanceTable) and `_lock` (WriterLock), and say what
their build meta is (`_meta`) and which event types never change their rows (`ignored_types`: the
runner skips batches of those alone and moves the checkpoint with `advance`, see
projections.core.projector.Skipping).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc
import structlog

from events import positions
from projections.core import checkpoint as checkpoint_file
from projections.core.checkpoint import Checkpoint
from projections.core.digest import ColumnDigester, canonical
from projections.core.errors import RebuildRequired
from projections.core.lance import LanceTable, WriterLock

log = structlog.get_logger(__name__)


class LanceProjection:
    name: str = ""
    ignored_types: frozenset[str] = frozenset()   # event types whose fold never changes a row
    directory: Path
    _table: LanceTable
    _lock: WriterLock

    async def _checkpointed_scan(self, empty: pa.Schema) -> tuple[Checkpoint | None, Scan]:
        """The checkpoint and a scan of the table version it records (of `empty`'s columns when there
        is none yet): what a digest reads."""
        ck = await asyncio.to_thread(checkpoint_file.load, self.directory)
        version = ck.table_version if ck is not None else None
        exists = version is not None and await self._table.exists()

        async def scan(columns: list[str]) -> pa.Table:
            if not exists:
                return empty.empty_table().select(columns)
            return await self._table.scan(columns, version)
        return ck, scan

    def _init_checkpointing(self) -> None:
        self._ck: Checkpoint | None = None
        self._ck_loaded = False
        self._recovered = False

    def _meta(self, *, complete: bool = True) -> dict[str, Any]:
        """The build meta stored with each checkpoint; `complete=False`: the part known without
        loading heavy dependencies (e.g. the embedding model's dimension)."""
        raise NotImplementedError

    def _check_meta(self, ck: Checkpoint | None, *, complete: bool) -> None:
        if ck is None or not ck.meta:
            return
        want = self._meta(complete=complete)
        got = {k: ck.meta.get(k) for k in want}
        if got != want:
            raise RebuildRequired(
                f"projection {self.directory} was built with {got}, this build uses {want}: "
                "rebuild it from the log (`zhiyi replay --in-place`, with zhiyi stopped)")

    def check_build(self) -> None:
        """Raise RebuildRequired when the projection on disk was built by another build (its schema,
        its model). Cheap: reads the checkpoint file only, loads nothing."""
        self._check_meta(checkpoint_file.load(self.directory), complete=False)

    async def _current(self) -> Checkpoint | None:
        if not self._ck_loaded:
            self._ck = await asyncio.to_thread(checkpoint_file.load, self.directory)
            self._ck_loaded = True
        return self._ck

    async def load_checkpoint(self) -> str | None:
        """The durably stored checkpoint (re-read from disk: another process may be the writer)."""
        ck = await asyncio.to_thread(checkpoint_file.load, self.directory)
        self._ck, self._ck_loaded = ck, True
        self._check_meta(ck, complete=False)
        if ck is not None and ck.table_version is not None:
            latest = await self._table.latest_version()
            if latest is None or latest < ck.table_version:
                # e.g. a power loss kept the fsynced checkpoint but not the table's last commits
                raise RebuildRequired(f"table in {self.directory} is at version {latest}, behind its checkpoint "
                                      f"(version {ck.table_version}, position {ck.position}): rebuild it")
        return ck.position if ck else None

    async def readable_as_checkpointed(self) -> bool:
        """Whether the table as of the checkpointed version can be read in full (a copy of the
        directory taken while a writer went on, say); True when there is nothing checkpointed."""
        ck = await asyncio.to_thread(checkpoint_file.load, self.directory)
        if ck is None or ck.table_version is None:
            return True
        return await self._table.readable_at(ck.table_version)

    async def close(self) -> None:
        """Close the table; release the writer lock (when held)."""
        await self._table.close()
        self._lock.release()
        self._recovered = False

    async def _save_checkpoint(self, ck: Checkpoint) -> None:
        """Overridable seam (tests simulate a crash between the rows and the checkpoint)."""
        await asyncio.to_thread(checkpoint_file.save, self.directory, ck)

    async def _checkpoint(self, ck: Checkpoint) -> None:
        await self._save_checkpoint(ck)
        self._ck = ck

    async def advance(self, position: str) -> None:
        """Skipping: store `position` as the checkpoint, when later than the stored one, at the table
        version the stored one names (no row changes)."""
        await self._recover()
        ck = await self._current()
        if ck is not None and positions.key(position) <= positions.key(ck.position):
            return
        version = ck.table_version if ck is not None else await self._table.version()
        await self._checkpoint(Checkpoint(self.name, position, version, self._meta()))

    async def _recover(self) -> None:
        """Once per writer: roll back commits made after the checkpoint (a crash between the rows
        and the checkpoint), so that the table is exactly the state as of its checkpoint."""
        self._lock.acquire()
        if self._recovered:
            return
        ck = await self._current()
        self._check_meta(ck, complete=True)
        self._recovered = True
        if ck is None:
            return  # nothing to roll back to: replays rely on the rows already there
        if ck.table_version is None:
            # checkpointed before the table held anything: rows there now came after the checkpoint
            if await self._table.exists() and await self._table.count() > 0:
                version = await self._table.truncate()
                await self._checkpoint(Checkpoint(ck.projector, ck.position, version, ck.meta))
                log.warning("projection.rolled_back", projector=self.name, restored="empty", position=ck.position)
            return
        latest = await self._table.latest_version()
        if latest is not None and latest > ck.table_version:
            version = await self._table.restore(ck.table_version)
            await self._checkpoint(Checkpoint(ck.projector, ck.position, version, ck.meta))
            log.warning("projection.rolled_back", projector=self.name, uncheckpointed_version=latest,
                        restored=ck.table_version, position=ck.position)

    async def _keep_checkpoint_after_optimize(self, ck: Checkpoint | None, before: int | None,
                                              version: int | None) -> None:
        """Same rows, newer version after a compaction: keep the checkpoint pointing at a version
        that is kept."""
        if ck is not None and ck.table_version == before and version != before:
            await self._checkpoint(Checkpoint(ck.projector, ck.position, version, ck.meta))


DIGEST_CHUNK = 65_536   # rows a digest turns into Python values at a time

Scan = Callable[[list[str]], Awaitable[pa.Table]]            # every row of these columns, of one version
Chunks = Callable[[pa.Table, pa.Array], Iterator[list[Any]]]  # a digest column's values from a scan, in an order


def column_values(name: str, convert: Callable[[list[Any]], list[Any]] | None = None) -> Chunks:
    """A stored column's values in the given order (row indices), DIGEST_CHUNK at a time, through
    `convert`: the table is neither sorted whole nor held as Python lists."""
    def chunks(table: pa.Table, order: pa.Array) -> Iterator[list[Any]]:
        column = table.column(name)
        for lo in range(0, len(order), DIGEST_CHUNK):
            values = column.take(order[lo:lo + DIGEST_CHUNK]).to_pylist()
            yield convert(values) if convert is not None else values
    return chunks


def key_order(table: pa.Table, key: str) -> pa.Array:
    """The row indices of `table` sorted by `key` (what `table.sort_by(key)` would take)."""
    return pc.sort_indices(table, sort_keys=[(key, "ascending")])


async def digest_by_column(scan: Scan, key: str, columns: Mapping[str, tuple[list[str], Chunks]]) -> str:
    """The column digest (`ColumnDigester`) of `columns`, each given as the stored columns it is made
    of and its values from a scan of those (and the key) in key order; one scan per column, so a table
    is never held whole (a 1M-row memories table held 3.3 GB of Arrow, its CRDT states 1.7 KB a row)."""
    keys = await scan([key])
    order = key_order(keys, key)
    digester = ColumnDigester(columns)
    for name in digester.names:
        stored, chunks = columns[name]
        part = await scan(list(dict.fromkeys([key, *stored])))
        here = order if part.column(key).equals(keys.column(key)) else key_order(part, key)
        await asyncio.to_thread(digester.add, name, chunks(part, here))
        del part
    return digester.hexdigest()


class TableProjection(LanceProjection):
    """A LanceDB projection of one plain table (no vectors): its digest is every column in key order as
    of the checkpoint, its upkeep a compaction (the tombstones and the episodes). Subclasses set `schema`
    and, in `__init__`, call `_init_upkeep`."""

    schema: pa.Schema
    retention: timedelta

    def _init_upkeep(self, retention: timedelta) -> None:
        self.retention = retention
        self._writes_since_optimize = 0
        self._maintained = False  # the first maintain always runs (it adds a missing key index)
        self.clock: Callable[[], float] = time.monotonic   # upkeep timing only, never folds
        self._prune_at: float | None = None  # when the versions the last optimize had to keep may go

    def upkeep_due(self) -> bool:
        """Whether `maintain` has work though nothing was written since its last run: the versions that
        run kept (younger than `retention` then) are older than that now and can be pruned."""
        return self._prune_at is not None and self.clock() >= self._prune_at

    async def advance(self, position: str) -> None:
        """Skipping: the checkpoint moves; the versions the last `maintain` kept are pruned once they are
        due (the runner calls `maintain` only after writes)."""
        await super().advance(position)
        if self.upkeep_due():
            await self.maintain()

    async def digest(self) -> str:
        return (await self.digest_at())[0]

    async def digest_at(self) -> tuple[str, str | None]:
        """Digest of the rows as of the checkpoint (the table version it records), in key order, and
        that checkpoint's position."""
        ck, scan = await self._checkpointed_scan(self.schema)
        columns = {name: ([name], column_values(name, canonical)) for name in self.schema.names}
        return await digest_by_column(scan, self._table.key, columns), ck.position if ck else None

    async def maintain(self) -> None:
        """Compact, refresh the indexes, prune versions older than `retention` (and, one `retention` after
        a run that followed writes, once more: what that run had to keep); digest unchanged."""
        if not await self._table.exists():
            return
        idle = self._maintained and not self._writes_since_optimize
        if idle and not self.upkeep_due():
            return
        await self._recover()
        ck = await self._current()
        before = await self._table.version()
        stats, version = await self._table.optimize(self.retention)
        again = not idle or version != before   # an idle run that changed nothing kept nothing more
        self._prune_at = self.clock() + self.retention.total_seconds() + 1.0 if again else None
        self._writes_since_optimize = 0
        self._maintained = True
        await self._keep_checkpoint_after_optimize(ck, before, version)
        log.info(f"{self.name}.optimized", version=version, stats=str(stats))

