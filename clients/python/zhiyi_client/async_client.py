"""`AsyncZhiyi`: the asyncio client (aiohttp)."""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import TypeVar

import aiohttp

from .api import Endpoints
from .binding import AsyncRunner
from .calls import Call, Prepared
from .client_core import ClientConfig, ClientCore
from .errors import ConnectionFailed, ZhiyiError
from .positions import PositionTracker
from .push import PushStream
from .retry import RetryPolicy

T = TypeVar("T")


class _Session:
    """The aiohttp session, created on first use inside the running loop (aiohttp needs one), and
    shared with the clients `with_key()` derives; closed only by its owner."""

    def __init__(self, session: aiohttp.ClientSession | None) -> None:
        self.session = session
        self.owned = session is None

    async def get(self) -> aiohttp.ClientSession:
        if self.session is None or self.session.closed:
            self.session = aiohttp.ClientSession()
            self.owned = True
        return self.session

    async def close(self) -> None:
        if self.owned and self.session is not None and not self.session.closed:
            await self.session.close()


class AsyncZhiyi(Endpoints, ClientCore, AsyncRunner):
    """The asyncio client: every endpoint is a coroutine method (see `Endpoints`), `listen()` the push
    socket. Use it as `async with AsyncZhiyi(url, key) as zy:` or call `await zy.close()`.

    `retries`: retries after the first attempt of a call, on failures retrying cannot make worse
    (see `zhiyi_client.retry`); writes carry one `Idempotency-Key` across them. `consistent`: reads
    wait until the projections include this client's latest write (`after=`). `session`: an aiohttp
    session of yours (not closed by `close()`).
    """

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 30.0, retries: int = 3,
                 session: aiohttp.ClientSession | None = None, consistent: bool = True,
                 retry_policy: RetryPolicy | None = None, tracker: PositionTracker | None = None) -> None:
        self.config = ClientConfig.build(base_url, api_key, timeout=timeout, retries=retries, consistent=consistent,
                                         retry_policy=retry_policy, tracker=tracker)
        self._session = _Session(session)

    def listen(self, agent_id: str, *, after: str | None = None, include_connected: bool = False,
               max_reconnects: int | None = None) -> PushStream:
        """The agent's push messages, resumed automatically after any disconnect (see `push`):
        `async with zy.listen("hermes-a06") as stream: async for message in stream: ...`.
        `after`: start after this position (else: live from now)."""
        return PushStream(self.config, self._session.get, agent_id, after=after,
                          include_connected=include_connected, max_reconnects=max_reconnects)

    async def close(self) -> None:
        if self._owner:
            await self._session.close()

    async def __aenter__(self) -> AsyncZhiyi:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def _execute(self, call: Call[T]) -> T:
        request, attempts = self._start(call)
        while True:
            try:
                return self._finish(call, await self._send(request))
            except ZhiyiError as error:
                await asyncio.sleep(attempts.next_delay(error))

    async def _send(self, request: Prepared) -> tuple[int, dict[str, str], bytes]:
        session = await self._session.get()
        try:
            async with session.request(request.method, request.url, headers=request.headers, data=request.body,
                                       timeout=aiohttp.ClientTimeout(total=self.config.timeout)) as resp:
                return resp.status, dict(resp.headers), await resp.read()
        except aiohttp.ClientConnectorError as exc:   # before anything was sent
            raise ConnectionFailed(f"{request.method} {request.url}: {exc}", sent=False) from exc
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            raise ConnectionFailed(f"{request.method} {request.url}: {exc!r}", sent=True) from exc
