"""The gateway's own steps in the wiring (`gateway.process.wiring.open_services(gateway=True)`): what
only a long-running server opens up front, and the shutdown-ordered steps — the audit writer
flushed, then `stopping` set and the runner tasks stopped, then the background tasks drained —
registered last so that they run first."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import structlog

from events.redis.append_call import require_durable
from gateway.process.instance_beat import claim
from gateway.process.shutdown import bounded, stop_tasks

if TYPE_CHECKING:
    from gateway.process.wiring import Services

log = structlog.get_logger(__name__)

RUNNERS_GRACE_S = 10.0
#: How often the serving index is brought up to the memories projection's checkpoint between recalls.
FOLLOW_EVERY_S = 1.0


async def open_gateway(s: Services, stack: AsyncExitStack) -> None:
    if s.settings.claim_instance:  # a second live gateway with this instance id: refuse to start
        await claim(s.instances, s.settings.instance_id, s.settings.role, s.settings.role,
                    await s.store.log_epoch() or "")
    if s.settings.durable:  # refuse to start rather than acknowledge writes whose fsync cannot be confirmed
        await require_durable(s.store.redis)
    await s.epoch_guard.open()  # the projections' epoch, expected by every append from now on
    # everything the app serves, opened before the shutdown-ordered steps below (so closed after them)
    _ = (s.commands, s.episode_commands, s.tombstones, s.episodes, s.recall, s.recall_cache, s.queries, s.eval,
         s.scheduler, s.reactions, s.distill_batcher, s.consolidation, s.triggers, s.replica,
         s.projector_runners if s.settings.run_projectors else None)
    s.warm_up_models()
    await s.recall.load()  # starts loading the serving index; LanceDB serves meanwhile
    shutdown_first(s, stack)


def shutdown_first(s: Services, stack: AsyncExitStack) -> None:
    """The gateway's shutdown-ordered steps, registered after everything else so that they run
    first: the audit writer is flushed (it is opened and started here), then `stopping` is set and
    the runner tasks are stopped, then the background tasks are drained; the rest closes after."""
    stack.push_async_callback(_drain, s.background)
    stack.push_async_callback(_stop_runners, s)
    s.audit.start()


async def _stop_runners(s: Services) -> None:
    s.stopping.set()
    await stop_tasks(s.runner_tasks, grace_s=RUNNERS_GRACE_S)


async def _drain(background: set[asyncio.Task]) -> None:
    if background:
        await bounded(asyncio.gather(*background, return_exceptions=True), "background")


async def warm_up(embedder: Any) -> None:
    """Load an embedding model off the loop; a failure is logged (the first use loads it again)."""
    try:
        await asyncio.to_thread(embedder.warm_up)
    except Exception:  # noqa: BLE001 - the first request will load (and report) it again
        log.exception("embedding.warm_up_failed")



async def follow_serving_index(recall: Any, stopping: asyncio.Event, every_s: float = FOLLOW_EVERY_S) -> None:
    """Keep the serving index at the projection's checkpoint while no recall comes (a recall brings
    it up to date too). Without this, a write burst with no recalls left it behind by more than
    `BIG_DELTA` rows; the first recall then dropped it for a reload, and every recall of the next
    ~15 s (at 100k memories) was served by LanceDB at 0.3-0.5 s. A refresh with nothing new
    costs a stat of the checkpoint file."""
    index = recall.index
    if index is None:
        return
    while not stopping.is_set():
        try:
            await index.refresh()
        except Exception:  # noqa: BLE001 - the next round (or recall) tries again
            log.exception("serving_index.follow_failed")
        try:
            await asyncio.wait_for(stopping.wait(), every_s)
        except asyncio.TimeoutError:
            pass
