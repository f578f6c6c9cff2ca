"""What every LanceDB projector shares: the checkpoint file (position + the table version it
corresponds to + build meta), refusing a projection built by another build, and crash recovery.

Rows are written first, then the checkpoint. After a crash between the two, the next writer rolls
the table back to the checkpointed version (`restore`) before folding anything, so the table is
exactly the state as of its checkpoint and the events after it are applied once. A checkpointed
version newer than the table (the table lost its last commits) is refused: rebuild from the log.
Subclasses set `name`, `directory`, `_table` (LanceTable) and `_lock` (WriterLock), and say what
their build meta is (`_meta`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import structlog

from projections.core import checkpoint as checkpoint_file
from projections.core.checkpoint import Checkpoint
from projections.core.errors import RebuildRequired
from projections.core.lance import LanceTable, WriterLock

log = structlog.get_logger(__name__)


class LanceProjection:
    name: str = ""
    directory: Path
    _table: LanceTable
    _lock: WriterLock

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

    async def _save_checkpoint(self, ck: Checkpoint) -> None:
        """Overridable seam (tests simulate a crash between the rows and the checkpoint)."""
        await asyncio.to_thread(checkpoint_file.save, self.directory, ck)

    async def _checkpoint(self, ck: Checkpoint) -> None:
        await self._save_checkpoint(ck)
        self._ck = ck

    async def _recover(self) -> None:
        """Once per writer: roll back commits made after the checkpoint (a crash between the rows
        and the checkpoint), so that the table is exactly the state as of its checkpoint."""
        self._lock.acquire()
        if self._recovered:
            return
        ck = await self._current()
        self._check_meta(ck, complete=True)
        self._recovered = True
        if ck is None or ck.table_version is None:
            return  # nothing to roll back to: replays rely on the rows already there
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
