"""The read side of one LanceDB table (`TableReader`): opened lazily, never created; a table that
does not exist yet (or is being created) reads as absent. The connection uses
`read_consistency_interval=timedelta(0)`, so every read sees the latest version a projector
committed, even from another process."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import lancedb

from projections.core.lance_session import SEARCH_READS, CacheBounds


class TableReader:
    def __init__(self, directory: Path, table: str, cache: CacheBounds = SEARCH_READS) -> None:
        self.directory = Path(directory)
        self.table_name = table
        self._db: Any = None
        self._table: Any = None
        self.session = cache.session()   # a new version at every read: bounded caches

    async def _open(self) -> Any | None:
        if self._table is not None:
            return self._table
        if not (self.directory / f"{self.table_name}.lance").exists():
            return None
        if self._db is None:
            self._db = await lancedb.connect_async(str(self.directory), read_consistency_interval=timedelta(0),
                                                   session=self.session)
        try:
            self._table = await self._db.open_table(self.table_name)
        except ValueError:  # "Table '...' was not found" (being created)
            return None
        return self._table

    def close(self) -> None:
        if self._table is not None:
            self._table.close()
        if self._db is not None:
            self._db.close()
        self._table = self._db = None
