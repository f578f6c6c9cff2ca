"""The memories table as the serving index reads it: as of a checkpoint's table version, whole (the
first load) or only the rows changed since a position (a refresh)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa

from events import positions
from projections.core.checkpoint import Checkpoint
from projections.core.lance_session import DELTA_READS, CacheBounds
from projections.memories.reader import RESULT_COLUMNS
from projections.memories.schema import SEARCH_TEXT, TABLE

LOAD_BATCH = 8192  # rows per batch read
LOAD_COLUMNS = list(dict.fromkeys([*RESULT_COLUMNS, SEARCH_TEXT, "vector", "is_deleted", "position", "agent_id",
                                   "derived_from"]))


class TableAt:
    """One LanceDB connection to the memories table of `directory`, opened lazily, its caches bounded
    (`projections.core.lance_session`: it opens a new version at every refresh)."""

    def __init__(self, directory: Path, cache: CacheBounds = DELTA_READS) -> None:
        self.directory = Path(directory)
        self._db: Any = None
        self.session = cache.session()

    async def open(self, ck: Checkpoint | None) -> Any:
        """The memories table as of the checkpoint (None: nothing to load)."""
        if ck is None or ck.position is None or not (self.directory / f"{TABLE}.lance").exists():
            return None
        if self._db is None:
            self._db = await lancedb.connect_async(str(self.directory), session=self.session)
        try:
            return await self._db.open_table(TABLE, version=ck.table_version) if ck.table_version is not None \
                else await self._db.open_table(TABLE)
        except ValueError:  # no table yet, or the checkpointed version was cleaned up after compactions
            try:
                return await self._db.open_table(TABLE)
            except ValueError:
                return None

    async def changed(self, ck: Checkpoint, since: str, most: int) -> pa.Table | None:
        """The rows that changed after position `since`, up to the checkpoint; more than `most`:
        the first `most` + 1 of them (the caller reloads instead)."""
        table = await self.open(ck)
        if table is None:
            return None
        assert ck.position is not None
        upto, held = positions.key(ck.position), positions.key(since)
        where = f"position >= '{positions.timestamp_ms(since)}'"  # coarse (a string compare); exact below
        kept = []
        try:
            reader = await table.query().where(where).select(LOAD_COLUMNS).to_batches(max_batch_length=LOAD_BATCH)
            count = 0
            async for batch in reader:
                keys = [positions.key(p) for p in batch.column("position").to_pylist()]
                # The latest version may hold a batch the projector has not checkpointed yet: not ours.
                mask = pa.array([held < k <= upto for k in keys], type=pa.bool_())
                batch = batch.filter(mask)
                kept.append(batch)
                count += batch.num_rows
                if count > most:
                    break
        finally:
            table.close()
        return pa.Table.from_batches(kept) if kept else None

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
