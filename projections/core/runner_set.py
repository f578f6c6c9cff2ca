"""The live projectors of one data dir, run together, and what they do when the log is reset.

A runner that finds the log wiped or replaced (`LogResetError`: the log's epoch is not the one
its projections were folded from, or a checkpoint's event is gone) stops folding. The set then
stops every runner, closes the projectors and waits — no crash, no restart loop — until the
projections on disk come from the current log (`zhiyi replay --in-place` swapped a rebuilt folder
in), then opens the projectors again over the new folder and folds on. Any other failure of a
runner is raised, as before (the process's supervisor restarts it).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import structlog

from events.errors import LogResetError
from events.redis.store import EventStore
from projections.core.epoch import load_epoch, open_projections_epoch
from projections.core.projector import Projector
from projections.core.registry import NAMES, make_projectors
from projections.core.runner import TRANSIENT, ProjectionRunner

log = structlog.get_logger(__name__)

STOP_GRACE_S = 15.0  # for the other runners to stop on their own once one failed
# a batch of recall audits alone waits this long for more (group commit, see projections.core.runner):
# their effects show up to this much later; at c=16 recalls it folds ~3 of the gateway's audit appends at once
AUDIT_GATHER_S = 0.3


@dataclass
class RunnerSet:
    store: EventStore
    data_dir: Path
    embedder: Any
    only: tuple[str, ...] = ()
    notify: Callable[[str, str], None] | None = None
    poll_s: float = 1.0
    gather_s: float = AUDIT_GATHER_S
    waiting: bool = field(default=False, init=False)     # stopped by a reset, waiting for a rebuild
    projectors: list[Projector] = field(default_factory=list, init=False)

    def _make(self) -> list[Projector]:
        return make_projectors(self.data_dir, self.embedder, only=[n for n in NAMES if n in self.only] if self.only else None)

    async def run(self, stop: asyncio.Event) -> None:
        """Fold until `stop`; through resets (see the module doc)."""
        while not stop.is_set():
            epoch = await self._open_epoch(stop)
            if stop.is_set():
                return
            self.projectors = self._make()
            runners = [ProjectionRunner(self.store, p, notify=self.notify, epoch=epoch, gather_s=self.gather_s)
                       for p in self.projectors]
            halt = asyncio.Event()  # `stop`, or one runner failed: the others stop on their own (no cancel mid-command)
            relay = asyncio.create_task(_relay(stop, halt))
            tasks = [asyncio.create_task(r.run(halt), name=f"projector:{r.name}") for r in runners]
            try:
                reset = await self._until_done(tasks, halt)
            finally:
                relay.cancel()
                await self._close()
            if not reset:
                return
            self.waiting = True
            log.error("projectors.log_reset", epoch=epoch,
                      action="waiting for the projections to be rebuilt from the current log: zhiyi replay --in-place")
            await self._wait_for_rebuild(stop)
            self.waiting = False

    async def _until_done(self, tasks: list[asyncio.Task], halt: asyncio.Event) -> bool:
        """Wait for the runners; True when they stopped for a reset log. Other failures raise."""
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            halt.set()  # the others finish their batch and stop (each read waits at most block_ms)
            _, stuck = await asyncio.wait(tasks, timeout=STOP_GRACE_S)
            for task in stuck:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            for task in tasks:
                task.cancel()
        errors = [e for t in tasks if not t.cancelled() and (e := t.exception()) is not None]
        other = [e for e in errors if not isinstance(e, LogResetError)]
        if other:
            raise other[0]
        return bool(errors)

    async def _close(self) -> None:
        for p in self.projectors:
            with contextlib.suppress(Exception):
                await p.close()
        self.projectors = []

    async def _open_epoch(self, stop: asyncio.Event) -> str | None:
        delay = 0.05
        while not stop.is_set():
            try:
                return await open_projections_epoch(self.store, self.data_dir)
            except TRANSIENT as exc:
                log.warning("projectors.epoch_unavailable", error=str(exc), retry_in_s=delay)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
                delay = min(delay * 2, 2.0)
        return None

    async def _wait_for_rebuild(self, stop: asyncio.Event) -> None:
        """Until the recorded epoch of the projections on disk is the log's (or `stop`)."""
        while not stop.is_set():
            with contextlib.suppress(*TRANSIENT):
                found = await self.store.log_epoch()
                if found is not None and found == load_epoch(self.data_dir):
                    log.info("projectors.rebuilt", epoch=found)
                    return
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), self.poll_s)


async def _relay(stop: asyncio.Event, halt: asyncio.Event) -> None:
    await stop.wait()
    halt.set()
