"""The gateway's guard against a wiped or replaced log (`log_reset`).

Before authentication (a wiped key index must not read as 401), every request but `/health` and
the OpenAPI document checks that the log's epoch (events.redis.keys.EPOCH) is the one the projections
it serves were folded from. On a mismatch it answers 503 `log_reset`, saying what to do; writes are
refused by the append script too (the store expects the served epoch), so nothing is appended to a
wiped log and a lost memory is never served as if current.

"The next request after a FLUSHALL is refused" holds: a request only trusts an epoch read that
began after it arrived. Concurrent requests share one read (one in flight, one queued), so the cost
is about one Redis round trip of latency and at most one GET per round trip.

A Redis that cannot be reached (or answers slower than `timeout_s`) is not a reset: reads go on
being served, writes fail on their own (503 `unavailable`).

When the projections on disk come to match the log again (`zhiyi replay --in-place` swapped a
rebuilt folder in), the guard calls `reopen(epoch)` (the app's readers drop their handles on the
old folder), makes the store expect the new epoch, and serving resumes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Awaitable, Callable

import structlog
from aiohttp import web

from events.errors import LogResetError
from events.redis.checkpoint_groups import reset_message
from events.redis.store import EventStore
from gateway.http.appkeys import EPOCH_GUARD
from projections.core.epoch import load_epoch, open_projections_epoch
from projections.core.runner import TRANSIENT

log = structlog.get_logger(__name__)

UNGUARDED_PATHS = frozenset({"/health", "/api/v1/openapi.json"})

_UNKNOWN = object()  # the log's epoch could not be read (Redis unreachable or slow)
# the agent keys' version this request's check read (events.redis.keys.AGENT_KEYS_VERSION): what the key
# cache of gateway.http.auth compares its kept answers with
KEYS_VERSION = web.RequestKey("keys_version", str)


@dataclass
class EpochGuard:
    store: EventStore
    data_dir: Path
    reopen: Callable[[str], Awaitable[None]] | None = None
    timeout_s: float = 0.5
    serving: str | None = field(default=None, init=False)   # epoch of the projections served (None: not known yet)
    _reading: bool = field(default=False, init=False)               # a round (one GET) is in flight
    _next: asyncio.Future | None = field(default=None, init=False)  # the round after it, for those who came since
    _rounds: set[asyncio.Task] = field(default_factory=set, init=False)
    _slow: asyncio.Future | None = field(default=None, init=False)
    _reopening: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)

    async def open(self) -> None:
        """At start: the projections' epoch (adopting the log's for fresh or pre-epoch ones). A Redis
        that cannot be reached leaves it unknown; the next check opens it."""
        try:
            self.serving = await open_projections_epoch(self.store, self.data_dir)
        except TRANSIENT as exc:
            # meanwhile a background append expects what the projections recorded (never a new log)
            self.store.epoch = self.store.epoch or load_epoch(self.data_dir)
            log.warning("epoch.unavailable", error=str(exc))
            return
        log.info("epoch.opened", epoch=self.serving, log_epoch=await self._read_quietly())

    async def check(self) -> str | None:
        """Raise LogResetError when the log was wiped or replaced under the served projections. Else the
        agent keys' version read with the epoch (keys.AGENT_KEYS_VERSION), for the key cache of
        `gateway.http.auth`: None when not known (Redis away, no key written, projections not open)."""
        read = await self._round()
        if read is _UNKNOWN:
            return None
        found, version = read  # type: ignore[misc]
        if self.serving is None:
            await self.open()
            if self.serving is None:
                return None
        if found == self.serving:
            return version
        if found is not None and found == load_epoch(self.data_dir):
            await self._reopen(found)
            return version
        raise LogResetError(reset_message(self.serving, found))

    async def log_epoch(self) -> str | None | object:
        """The log's epoch as read by a GET that began after this call did; _UNKNOWN when Redis
        cannot be reached (see `_round`)."""
        read = await self._round()
        return read if read is _UNKNOWN else read[0]  # type: ignore[index]

    async def _round(self) -> tuple[str | None, str | None] | object:
        """(epoch, agent keys' version) as read by a round trip that began after this call did; _UNKNOWN
        when Redis cannot be reached. With no read in flight the caller reads itself (no task); otherwise
        it waits for the next round, which the one in flight starts as it ends, for all who wait."""
        if not self._reading:
            self._reading = True
            return await self._lead(None)
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
        return await asyncio.shield(self._next)

    async def _lead(self, promised: asyncio.Future | None) -> object:
        try:
            result = await self._read()
        except BaseException as exc:
            self._end_round()
            if promised is not None and not promised.done():
                promised.set_exception(exc)
            raise
        self._end_round()
        if promised is not None and not promised.done():
            promised.set_result(result)
        return result

    def _end_round(self) -> None:
        waiting, self._next = self._next, None
        if waiting is None:
            self._reading = False
            return
        task = asyncio.ensure_future(self._lead(waiting))   # still reading: the next round begins now
        self._rounds.add(task)
        task.add_done_callback(self._round_done)

    def _round_done(self, task: asyncio.Task) -> None:
        self._rounds.discard(task)
        if not task.cancelled():
            task.exception()  # delivered to the waiters through their future

    async def _read(self) -> tuple[str | None, str | None] | object:
        if self._slow is not None and not self._slow.done():
            return _UNKNOWN  # an earlier read is still stuck in a hung Redis: do not pile more on it
        get = asyncio.ensure_future(self.store.log_epoch_and_keys_version())  # never cancelled: redis-py and cancellation
        done, _ = await asyncio.wait({get}, timeout=self.timeout_s)
        if not done:
            self._slow = get
            get.add_done_callback(lambda f: f.cancelled() or f.exception())
            return _UNKNOWN
        try:
            return get.result()
        except TRANSIENT:
            return _UNKNOWN

    async def _read_quietly(self) -> str | None:
        found = await self._read()
        return None if found is _UNKNOWN else found[0]  # type: ignore[index]

    async def _reopen(self, epoch: str) -> None:
        async with self._reopening:
            if self.serving == epoch:
                return
            log.warning("epoch.projections_rebuilt", previous=self.serving, epoch=epoch)
            if self.reopen is not None:
                await self.reopen(epoch)
            self.store.epoch = epoch
            self.serving = epoch


@web.middleware
async def epoch_middleware(request: web.Request, handler) -> web.StreamResponse:
    """503 `log_reset` (raised as LogResetError for the error middleware) before auth runs."""
    if request.path not in UNGUARDED_PATHS:
        guard = request.app.get(EPOCH_GUARD)
        if guard is not None:
            if (version := await guard.check()) is not None:
                request[KEYS_VERSION] = version
    return await handler(request)
