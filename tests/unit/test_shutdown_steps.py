"""The services' shutdown (gateway.process.wiring): every close is bounded — a close that never
returns, or fails, is logged and the remaining steps still run —, the pieces close in the reverse
order of opening, and the gateway's ordered steps run first: the audit writer is flushed, then
`stopping` is set and the runner tasks stop, then the background tasks drain, then the rest closes.

No Redis: nothing here sends a command (the client connects on first use)."""

from __future__ import annotations

import asyncio
import time

import pytest

from gateway.process import shutdown, wiring
from gateway.process.settings import Settings
from gateway.process.shutdown import bounded
from gateway.process.gateway_steps import shutdown_first
from gateway.process.wiring import open_services


async def test_a_stuck_or_failing_step_is_given_up_and_the_next_runs() -> None:
    ran = []

    async def fails() -> None:
        raise RuntimeError("broken client")

    async def works() -> None:
        ran.append("next")

    started = time.monotonic()
    await bounded(asyncio.Event().wait(), "never returns", timeout_s=0.1)
    await bounded(fails(), "fails")
    await bounded(works(), "works")
    assert ran == ["next"] and time.monotonic() - started < 2.0


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(redis_url="redis://127.0.0.1:9/0", data_dir=tmp_path, api_key="k", instance_id="t")


async def test_each_piece_closes_once_in_reverse_order_however_the_others_close(settings, monkeypatch) -> None:
    monkeypatch.setattr(shutdown, "CLOSE_TIMEOUT_S", 0.1)
    closed: list[str] = []

    def sync_close(name: str, fail: bool = False):
        def close() -> None:
            closed.append(name)
            if fail:
                raise RuntimeError(f"{name} broke")
        return close

    async def stuck() -> None:
        closed.append("stuck")
        await asyncio.Event().wait()

    async def fails() -> None:
        closed.append("fails")
        raise RuntimeError("broken client")

    started = time.monotonic()
    async with open_services(settings) as services:
        services._closes_sync(sync_close("first"), "first")
        services._closes(stuck, "stuck")
        services._closes_sync(sync_close("broken", fail=True), "broken")
        services._closes(fails, "fails")
        services._closes_sync(sync_close("last"), "last")
    assert closed == ["last", "fails", "broken", "stuck", "first"]
    assert time.monotonic() - started < 2.0


async def test_lazy_pieces_open_only_what_they_use(settings) -> None:
    async with open_services(settings) as services:
        assert services.scheduler.graph is services.graph
        opened = set(vars(services))
    assert {"store", "commands", "memories", "activity", "graph", "waiter", "scheduler"} <= opened
    assert not opened & {"embedder", "recall", "reranker", "audit", "synonyms", "tombstones"}


class _Audit:
    """Stands in for the AuditWriter: records its flush, and what had stopped by then."""

    def __init__(self, log: list[str], services_box: list) -> None:
        self.log = log
        self.box = services_box

    def start(self) -> None:
        self.log.append("audit started")

    async def close(self) -> None:
        self.log.append(f"audit flushed (stopping set: {self.box[0].stopping.is_set()})")


async def test_the_gateway_flushes_the_audit_then_stops_the_runners_then_drains_then_closes_the_rest(
        settings, monkeypatch) -> None:
    log: list[str] = []
    box: list = []
    monkeypatch.setattr(wiring, "AuditWriter", lambda *a, **kw: _Audit(log, box))

    async def runner(stopping: asyncio.Event) -> None:
        await stopping.wait()
        await asyncio.sleep(0.05)
        log.append("runner stopped")

    async def background() -> None:
        await asyncio.sleep(0.1)
        log.append("background drained")

    async with open_services(settings) as services:
        box.append(services)
        services._closes_sync(lambda: log.append("the rest closed"), "rest")
        shutdown_first(services, services._stack)
        services.runner_tasks.append(asyncio.create_task(runner(services.stopping)))
        services.background.add(asyncio.create_task(background()))
    assert log == ["audit started", "audit flushed (stopping set: False)", "runner stopped",
                   "background drained", "the rest closed"]
