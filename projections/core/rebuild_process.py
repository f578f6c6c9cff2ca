"""A rebuild on two cores: the graph projection is folded in a second process.

`zhiyi replay` is CPU-bound Python; one process uses one core. The two costliest projections are
memories (it embeds: the embedder lives in the calling process) and graph. So graph is folded by a
spawned child that reads the same log over its own connection (`SecondProcess.open_log`); every other
projection stays here (see AWAY for the measured balance). The child imports only what its
projections need (no LanceDB). What each projection folds does not depend on the process it runs in:
the digests are the same either way.

The child is spawned (never forked: the caller holds threads and sockets), runs `setup` first (the
entry point's logging, so its lines go where the caller's go), and sends back its digests or its
error. It is terminated if the caller fails or is cancelled first.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import pickle
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Callable

import structlog

from events.redis.store import EventStore
from projections.core.errors import ProjectionError
from projections.core.heap import fix_mmap_threshold
from projections.core.rebuild_fold import ProjectionDigest, Until, fold_projectors
from projections.core.registry import make_projectors

log = structlog.get_logger(__name__)

#: Projections folded by the second process (they need no embedder, nor LanceDB). Graph alone since its
#: entity extraction grew with realistic texts: on million.py's 100k data (177k events, texts of 40-300
#: characters) graph and activity there took 37 s of CPU against 26 s here; on replay_speed.py's log
#: (texts of 6-14 words) the two were about even with activity there.
AWAY = frozenset({"graph"})
#: Below this many events a second process saves too little to be worth its start-up (~0.4 s: an interpreter and
#: its imports; ~2 s while it imported every projection).
MIN_EVENTS = 20_000


@dataclass(frozen=True, slots=True)
class SecondProcess:
    """How the child reaches the log, and when to use one. The callables cross to the spawned process:
    module-level functions, or partials of them (the wiring's `log_reader(url)`)."""
    open_log: Callable[[], AbstractAsyncContextManager[EventStore]]   # the child's own store over the log
    setup: Callable[[], None] | None = None    # run first in the child (e.g. the entry point's logging)
    min_events: int = MIN_EVENTS               # a shorter log is folded in one process


@dataclass(frozen=True, slots=True)
class _Job:
    open_log: Callable[[], AbstractAsyncContextManager[EventStore]]
    directory: Path
    names: tuple[str, ...]
    until: Until
    batch_size: int
    epoch: str | None
    setup: Callable[[], None] | None


async def fold_elsewhere(second: SecondProcess, directory: Path, names: list[str], until: Until,
                         batch_size: int, epoch: str | None) -> dict[str, ProjectionDigest]:
    """Fold the projectors `names` under `directory` in a spawned process; their digests. Cancelling
    (or a failure of the caller's own fold, which cancels this) terminates the child."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    job = _Job(second.open_log, Path(directory), tuple(names), until, batch_size, epoch, second.setup)
    proc = ctx.Process(target=_child, args=(child, job), name="zhiyi-replay-fold", daemon=True)
    proc.start()
    child.close()
    log.info("replay.second_process", pid=proc.pid, projectors=list(names))
    try:
        status, value = await asyncio.to_thread(_receive, parent, proc)
    finally:
        if proc.is_alive():
            proc.terminate()
        await asyncio.to_thread(proc.join, 10)
        parent.close()
    if status == "error":
        raise value if isinstance(value, BaseException) else ProjectionError(str(value))
    return value  # type: ignore[no-any-return]


def _receive(conn: Connection, proc: Any) -> tuple[str, Any]:
    try:
        return conn.recv()  # type: ignore[no-any-return]
    except EOFError:
        proc.join(5)
        return "error", ProjectionError(f"the replay's second process (pid {proc.pid}) ended without an answer "
                                        f"(exit code {proc.exitcode})")


def _child(conn: Connection, job: _Job) -> None:
    fix_mmap_threshold()   # as the CLI does in every zhiyi process
    try:
        if job.setup is not None:
            job.setup()
        answer: tuple[str, Any] = ("ok", asyncio.run(_fold(job)))
    except BaseException as exc:  # noqa: BLE001 - handed to the caller, which raises it
        answer = ("error", exc)
    try:
        conn.send(answer)
    except (pickle.PicklingError, TypeError, AttributeError):
        conn.send(("error", ProjectionError(f"{type(answer[1]).__name__}: {answer[1]}")))
    finally:
        conn.close()


async def _fold(job: _Job) -> dict[str, ProjectionDigest]:
    projectors = make_projectors(job.directory, None, offline=True, only=job.names)
    try:
        async with job.open_log() as store:
            return await fold_projectors(store, projectors, job.until, job.batch_size, job.epoch)
    finally:
        for p in projectors:
            await p.close()
