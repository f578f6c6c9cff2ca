"""The push listener: `GET /api/v1/ws/{agent_id}` as an endless, resuming stream of `PushMessage`s.

The server sends `connected` first (the position live delivery starts after), then the push types,
each identified by its position (an event gives an agent at most one message). When the socket ends
— a `resync` and close code 4000 because the client read too slowly, a dropped connection, a server
restart — the stream reconnects with `?after=<the last position received>`: the server sends exactly
what followed, in order. Messages at or before the last position are dropped, so the caller sees
each message once, in log order, across any number of reconnects. Reconnects back off exponentially
(bounded by the client's retry policy) while no message gets through; auth errors (400/401/403/404)
are raised, not retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from types import TracebackType

import aiohttp

from .client_core import ClientConfig
from .errors import ConnectionFailed, ZhiyiError, error_class
from .models import PushMessage
from .positions import is_after, is_position

RESYNC_CLOSE_CODE = 4000
HEARTBEAT_S = 30.0          # the client pings too: a half-open connection is noticed within 1.5x this
STABLE_AFTER_S = 30.0       # a connection that lasted this long resets the back-off
_FATAL_HANDSHAKE = {400: "invalid_request", 401: "unauthorized", 403: "forbidden", 404: "not_found"}


class PushStream:
    """`async for message in stream` (use `async with` or `aclose()` to end it). `last_position` is
    the position of the last message received: store it to resume later with `listen(after=...)`."""

    def __init__(self, config: ClientConfig, session: Callable[[], Awaitable[aiohttp.ClientSession]],
                 agent_id: str, *, after: str | None = None, include_connected: bool = False,
                 max_reconnects: int | None = None) -> None:
        if after is not None and not is_position(after):
            raise ValueError(f"after: not a position: {after!r}")
        self.config = config
        self.agent_id = agent_id
        self.last_position = after
        self.include_connected = include_connected
        self.max_reconnects = max_reconnects
        self.reconnects = 0          # sockets opened after the first
        self._session = session
        self._messages = self._run()

    def __aiter__(self) -> PushStream:
        return self

    async def __anext__(self) -> PushMessage:
        return await self._messages.__anext__()

    async def aclose(self) -> None:
        await self._messages.aclose()

    async def __aenter__(self) -> PushStream:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def _run(self) -> AsyncGenerator[PushMessage, None]:
        failures = 0        # reconnects since a message last got through
        while True:
            opened = time.monotonic()
            try:
                async with contextlib.aclosing(self._one_socket()) as messages:
                    async for message in messages:
                        if message.type != "connected":
                            failures = 0        # progress: the next reconnect is immediate
                        yield message
            except aiohttp.WSServerHandshakeError as exc:
                if exc.status in _FATAL_HANDSHAKE:
                    raise handshake_error(exc.status, exc.message) from exc
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError, ValueError):
                pass        # dropped, refused, or garbage: reconnect
            if time.monotonic() - opened >= STABLE_AFTER_S:
                failures = 0
            failures += 1
            if self.max_reconnects is not None and failures > self.max_reconnects:
                raise ConnectionFailed(f"push socket for {self.agent_id}: gave up after {failures - 1} reconnects",
                                       sent=True)
            await asyncio.sleep(self.config.policy.backoff(failures) if failures > 1 else 0.0)
            self.reconnects += 1

    async def _one_socket(self) -> AsyncGenerator[PushMessage, None]:
        """The messages of one connection, until it ends (normally, by a resync, or by an error)."""
        session = await self._session()
        headers = {"X-API-Key": self.config.api_key} if self.config.api_key else {}
        params = {"after": self.last_position} if self.last_position else {}
        async with session.ws_connect(self.config.socket_url(self.agent_id), headers=headers, params=params,
                                      heartbeat=HEARTBEAT_S, autoping=True) as ws:
            async for frame in ws:
                if frame.type is aiohttp.WSMsgType.ERROR:
                    return          # a broken connection (e.g. no pong): reconnect
                if frame.type is not aiohttp.WSMsgType.TEXT:
                    continue
                message = PushMessage.from_json(json.loads(frame.data))
                if message.type == "resync":
                    return          # the server closes with 4000: resume from the last position received
                if message.type == "connected":
                    if self.last_position is None and is_position(message.position):
                        self.last_position = message.position   # a reconnect resumes from here, not "now"
                    if self.include_connected:
                        yield message
                    continue
                if is_position(message.position) and not is_after(message.position, self.last_position):
                    continue        # already delivered before a reconnect
                self.last_position = message.position
                yield message


def handshake_error(status: int, message: str) -> ZhiyiError:
    """The error for a refused socket handshake (the server's JSON body is not available there)."""
    code = _FATAL_HANDSHAKE.get(status, "http_error")
    return error_class(status, code)(status, code, message)
