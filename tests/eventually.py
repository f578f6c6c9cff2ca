"""One way for tests to wait for a condition, instead of hand-rolled poll loops and sleeps.

    value = await eventually(lambda: store.last_position(), timeout_s=5, what="an event in the log")
    value = eventually_sync(lambda: ready.exists(), timeout_s=60, what="the ready file")

`check` is called every `interval_s` until it returns a truthy value (an awaitable it returns is
awaited), which is then returned; after `timeout_s` the test fails with an AssertionError naming
what was awaited and the last value seen. An exception raised by `check` is not swallowed.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any


def _describe(check: Callable[[], Any], what: str | None) -> str:
    if what:
        return what
    code = getattr(check, "__code__", None)
    where = f" ({code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno})" if code else ""
    return f"{getattr(check, '__qualname__', repr(check))}{where}"


async def eventually(check: Callable[[], Any], *, timeout_s: float = 5.0, interval_s: float = 0.02,
                     what: str | None = None) -> Any:
    """Await until `check()` (sync or async) is truthy; return that value."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if loop.time() >= deadline:
            raise AssertionError(f"not reached within {timeout_s} s: {_describe(check, what)} "
                                 f"(last value {value!r})")
        await asyncio.sleep(interval_s)


def eventually_sync(check: Callable[[], Any], *, timeout_s: float = 5.0, interval_s: float = 0.02,
                    what: str | None = None) -> Any:
    """The blocking twin of `eventually`, for tests that drive subprocesses from plain threads."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"not reached within {timeout_s} s: {_describe(check, what)} "
                                 f"(last value {value!r})")
        time.sleep(interval_s)
