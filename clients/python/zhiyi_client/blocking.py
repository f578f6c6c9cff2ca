"""The sync client's push listener: the async `PushStream` driven from blocking code.

The stream runs on a private event loop in a daemon thread, so it works in any thread, also one that
runs an event loop of its own (a notebook). Each `next()` asks the stream for one message and waits
for it: nothing is read ahead, so a caller that stops reading makes the server see a slow consumer,
as with the async stream. A caller that pauses for long may find the socket closed by the server (a
`resync`, or pings left unanswered); the next `next()` resumes from the last position received, so
no message is lost or repeated either way.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine, Iterator
from types import TracebackType
from typing import Any, TypeVar

import aiohttp

from .client_core import ClientConfig
from .models import PushMessage
from .push import PushStream

T = TypeVar("T")

_CLOSE_TIMEOUT_S = 5.0


class _LoopThread:
    """An event loop running forever in a daemon thread; `run(coro)` waits for a result there."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="zhiyi-push", daemon=True)
        self.thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return self.submit(coro).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(_CLOSE_TIMEOUT_S)
        if not self.thread.is_alive():
            self.loop.close()


class BlockingPushStream:
    """`for message in stream` (end it with `close()` or `with`). `last_position`: as `PushStream`'s."""

    def __init__(self, config: ClientConfig, agent_id: str, *, after: str | None = None,
                 include_connected: bool = False, max_reconnects: int | None = None) -> None:
        self._thread: _LoopThread | None = None      # started by the first next()
        self._session: aiohttp.ClientSession | None = None
        self._pending: concurrent.futures.Future[PushMessage] | None = None
        self._closed = False
        self.stream = PushStream(config, self._get_session, agent_id, after=after,
                                 include_connected=include_connected, max_reconnects=max_reconnects)

    @property
    def last_position(self) -> str | None:
        return self.stream.last_position

    @property
    def reconnects(self) -> int:
        return self.stream.reconnects

    def __iter__(self) -> Iterator[PushMessage]:
        return self

    def __next__(self) -> PushMessage:
        return self.next()

    def next(self, timeout: float | None = None) -> PushMessage:
        """The next message, waiting at most `timeout` seconds (then TimeoutError, the stream staying
        open: the next call goes on waiting for the same message). An error ends the stream, and so
        does a KeyboardInterrupt while waiting."""
        if self._closed:
            raise StopIteration
        if self._thread is None:
            self._thread = _LoopThread()
        if self._pending is None or self._pending.done():
            self._pending = self._thread.submit(self._next())
        try:
            return self._pending.result(timeout)
        except concurrent.futures.TimeoutError:
            if self._pending.done():
                self.close()
                raise
            raise TimeoutError(f"no push message within {timeout} s") from None
        except StopAsyncIteration:
            self.close()
            raise StopIteration from None
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._thread is None:
            return
        if self._pending is not None and not self._pending.done():
            self._pending.cancel()      # cancels the task waiting in the loop
        try:
            self._thread.run(self._shutdown(), _CLOSE_TIMEOUT_S)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass
        self._thread.stop()

    def __enter__(self) -> BlockingPushStream:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def _next(self) -> PushMessage:
        return await self.stream.__anext__()

    async def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        return self._session

    async def _shutdown(self) -> None:
        await asyncio.sleep(0)     # let a cancelled `_next` finish unwinding first
        try:
            await self.stream.aclose()
        except RuntimeError:
            pass    # still running (a cancelled anext that has not unwound yet): the session close ends it
        if self._session is not None:
            await self._session.close()
