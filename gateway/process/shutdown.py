"""Bounded shutdown steps: every close and task stop of a zhiyi process waits a bounded time, and
a failing or stuck step is logged while the next still runs (one stuck close must not keep the
process from exiting)."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

import structlog

log = structlog.get_logger(__name__)

CLOSE_TIMEOUT_S = 10.0


async def stop_tasks(tasks: list[asyncio.Task], *, grace_s: float) -> None:
    """Let the runners stop on their own (they watch `stopping`), then cancel what is left; never
    wait on a task forever (one stuck in a provider call or a wait must not hang the shutdown)."""
    if not tasks:
        return
    _, pending = await asyncio.wait(tasks, timeout=grace_s)
    for task in pending:
        task.cancel()
    if pending:
        _, stuck = await asyncio.wait(pending, timeout=2.0)
        for task in stuck:
            log.warning("shutdown.task_stuck", task=task.get_name())
    for task in tasks:
        if task.done() and not task.cancelled() and task.exception() is not None:
            log.error("shutdown.task_failed", task=task.get_name(), error=str(task.exception()))


async def bounded(awaitable: Awaitable[Any], what: str, timeout_s: float = CLOSE_TIMEOUT_S) -> None:
    """Await one shutdown step for at most `timeout_s`; a failure or a timeout is logged, not raised."""
    try:
        await asyncio.wait_for(awaitable, timeout_s)
    except asyncio.TimeoutError:
        log.error("shutdown.step_stuck", step=what, timeout_s=timeout_s)
    except Exception as exc:  # noqa: BLE001 - the remaining steps still run
        log.warning("shutdown.step_failed", step=what, error=str(exc))


async def close_bounded(close: Callable[[], Awaitable[Any]], what: str) -> None:
    try:
        step = close()
    except Exception as exc:  # noqa: BLE001 - the remaining steps still run
        log.warning("shutdown.step_failed", step=what, error=str(exc))
        return
    await bounded(step, what, CLOSE_TIMEOUT_S)


def close_quietly(close: Callable[[], Any], what: str) -> None:
    """A synchronous close (a reader's handles, a model): a failure is logged, the next step runs."""
    try:
        close()
    except Exception as exc:  # noqa: BLE001 - the remaining steps still run
        log.warning("shutdown.step_failed", step=what, error=str(exc))
