"""Running the gateway (`zhiyi up` / `zhiyi serve`) and the projectors alone (`zhiyi project`)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path
from typing import Any

import structlog

from events import positions
from gateway.http import listener
from gateway.http.app import create_app
from gateway.process.settings import Settings
from gateway.process.gateway_steps import warm_up
from gateway.process.instance_beat import InstanceTaken, beat_until, claim
from gateway.process.wiring import Services, open_services
from projections.core.registry import NAMES

log = structlog.get_logger(__name__)

WATCH_EVERY_S = 10


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop when installed (a dependency; markedly faster HTTP on small machines), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def serve_forever(settings: Settings) -> None:
    """Serve until SIGINT/SIGTERM; aiohttp then runs the cleanup contexts (drain, checkpoints)."""
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    listener.run(create_app(settings), settings.host, settings.port, loop=loop, shutdown_timeout=10)


async def _report_ready(embedder, ready_file: Path | None) -> None:
    """Load the embedding model, then touch `ready_file` when given (`zhiyi project --ready-file`):
    `zhiyi up` waits for it before it serves, so first commits do not wait on a loading model."""
    await warm_up(embedder)
    if ready_file is not None:
        ready_file.touch()


async def run_projectors(settings: Settings) -> int:
    """Run the projector runners in this process until SIGINT/SIGTERM, with a heartbeat key."""
    names = [n for n in NAMES if not settings.projectors_only or n in settings.projectors_only]
    if not names:
        log.error("projectors.none", only=settings.projectors_only)
        return 2
    async with open_services(settings) as services:
        return await _project(services, names)


async def _project(services: Services, names: list[str]) -> int:
    settings, store, stop = services.settings, services.store, services.stopping
    runners = services.projector_runners

    def info() -> str:
        return "projector:" + ",".join(names) + (" waiting:log_reset" if runners.waiting else "")

    async def record() -> dict[str, Any]:
        checkpoints = await store.checkpoints()
        mine = [checkpoints.get(n) for n in names]
        return {"position": None if None in mine else min(mine, key=positions.key), "projectors": names}

    if settings.claim_instance:
        try:
            await claim(services.instances, settings.instance_id, "projector", info(), store.epoch or "")
        except InstanceTaken as exc:
            log.error("instance.taken", error=str(exc))
            return 2
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    # one task for all: it stops, waits and reopens them through a reset log (projections.core.runner_set)
    tasks = [asyncio.create_task(runners.run(stop), name="projectors")]
    beat = asyncio.create_task(beat_until(stop, services.instances, settings.instance_id, "projector", record, info,
                                          epoch=lambda: store.epoch or ""), name="heartbeat")
    await _report_ready(services.embedder, settings.ready_file)
    log.info("projectors.running", names=names, instance_id=settings.instance_id)
    rc = 0
    try:
        while not stop.is_set():
            done = [t for t in tasks if t.done()]
            if done:
                for t in done:
                    if t.exception() is not None:
                        log.error("projector.failed", name=t.get_name(), error=str(t.exception()))
                        rc = 1
                stop.set()
                break
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), WATCH_EVERY_S)
    finally:
        stop.set()
        await asyncio.gather(*tasks, beat, return_exceptions=True)
    return rc
