"""What the gateway's in-memory views of a SQLite projection share (`RecallCounts`,
`PrefetchPartners`): they follow the projection by its change numbers, reading what changed since
the last number they applied in a worker thread, at most every `max_age_s`, started by the
lookups themselves so an idle gateway reads nothing. A lookup never waits for a refresh.

Subclasses give `_read(since)` (run in the thread: the changes after `since`, with the latest
change number, or None while there is nothing to read) and `_apply(changes)` (on the loop).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog

log = structlog.get_logger(__name__)


class ProjectionFollower:
    name = "follower"

    def __init__(self, max_age_s: float) -> None:
        self.max_age_s = max_age_s
        self._change = -1                       # the latest change number applied; -1: not loaded
        self._checked = float("-inf")           # monotonic time of the last refresh
        self._refreshing: asyncio.Task | None = None

    @property
    def loaded(self) -> bool:
        return self._change >= 0

    def _read(self, since: int) -> Any:
        raise NotImplementedError

    def _apply(self, changes: Any) -> None:
        raise NotImplementedError

    def _schedule_refresh(self) -> None:
        if self._refreshing is not None or time.monotonic() - self._checked < self.max_age_s:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # called outside a loop (a CLI): refresh in line
            self._applied(self._read(self._change))
            return
        self._refreshing = loop.create_task(self._refresh(), name=f"{self.name}:refresh")

    async def refresh(self) -> None:
        """Catch up with the projection now (tests, start-up)."""
        if self._refreshing is not None:
            await asyncio.gather(self._refreshing, return_exceptions=True)
        self._applied(await asyncio.to_thread(self._read, self._change))

    async def close(self) -> None:
        """Wait for a refresh in flight (its thread reads the reader's connection)."""
        if self._refreshing is not None:
            await asyncio.gather(self._refreshing, return_exceptions=True)

    async def _refresh(self) -> None:
        try:
            self._applied(await asyncio.to_thread(self._read, self._change))
        except Exception as exc:  # noqa: BLE001 - a failed refresh only leaves the view older
            log.warning(f"{self.name}.refresh_failed", error=str(exc))
        finally:
            self._refreshing = None

    def _applied(self, changes: Any) -> None:
        self._checked = time.monotonic()
        if changes is not None:
            self._apply(changes)

    async def reset(self) -> None:
        """Forget the view now: its projection was replaced (`zhiyi replay --in-place`), whose
        change numbers start again. The next lookup reloads it."""
        await self.close()
        self._forget()
        self._restart()

    def _forget(self) -> None:
        """Drop what the view holds (subclasses)."""

    def _restart(self) -> None:
        """Forget everything (a rebuilt projection): the next lookup reloads it."""
        self._change, self._checked = -1, float("-inf")
