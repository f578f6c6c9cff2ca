"""The gateway's shutdown steps are bounded (gateway.process.runtime._bounded): a close that never
returns, or fails, is logged and the remaining steps still run."""

from __future__ import annotations

import asyncio
import time

from gateway.process.runtime import _bounded


async def test_a_stuck_or_failing_step_is_given_up_and_the_next_runs() -> None:
    ran = []

    async def fails() -> None:
        raise RuntimeError("broken client")

    async def works() -> None:
        ran.append("next")

    started = time.monotonic()
    await _bounded(asyncio.Event().wait(), "never returns", timeout_s=0.1)
    await _bounded(fails(), "fails")
    await _bounded(works(), "works")
    assert ran == ["next"] and time.monotonic() - started < 2.0
