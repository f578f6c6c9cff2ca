"""`Zhiyi`: the blocking client (the standard library's `urllib`; no event loop, no thread), and its
push listener (the async one, run on a private event loop in a thread)."""

from __future__ import annotations

import http.client
import time
import urllib.error
import urllib.request
from types import TracebackType
from typing import TypeVar

from .api import Endpoints
from .binding import SyncRunner
from .blocking import BlockingPushStream
from .calls import Call, Prepared
from .client_core import ClientConfig, ClientCore
from .errors import ConnectionFailed, ZhiyiError
from .positions import PositionTracker
from .retry import RetryPolicy

T = TypeVar("T")

# environment proxies are not used, as aiohttp (the async client) does not use them either
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Zhiyi(Endpoints, ClientCore, SyncRunner):
    """The blocking client: the same methods as `AsyncZhiyi` (see `Endpoints`), returning results.
    Safe to share between threads. Arguments as `AsyncZhiyi`'s (without `session`)."""

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 30.0, retries: int = 3,
                 consistent: bool = True, retry_policy: RetryPolicy | None = None,
                 tracker: PositionTracker | None = None) -> None:
        self.config = ClientConfig.build(base_url, api_key, timeout=timeout, retries=retries, consistent=consistent,
                                         retry_policy=retry_policy, tracker=tracker)

    def listen(self, agent_id: str, *, after: str | None = None, include_connected: bool = False,
               max_reconnects: int | None = None) -> BlockingPushStream:
        """The agent's push messages as a blocking iterator, resumed automatically after any disconnect:
        `with zy.listen("hermes-a06") as stream: for message in stream: ...`."""
        return BlockingPushStream(self.config, agent_id, after=after, include_connected=include_connected,
                                  max_reconnects=max_reconnects)

    def close(self) -> None:
        """Nothing to release (no connection is kept between calls); for symmetry with `AsyncZhiyi`."""

    def __enter__(self) -> Zhiyi:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _execute(self, call: Call[T]) -> T:
        request, attempts = self._start(call)
        while True:
            try:
                return self._finish(call, self._send(request))
            except ZhiyiError as error:
                time.sleep(attempts.next_delay(error))

    def _send(self, request: Prepared) -> tuple[int, dict[str, str], bytes]:
        req = urllib.request.Request(request.url, data=request.body, headers=request.headers, method=request.method)
        try:
            try:
                with _OPENER.open(req, timeout=self.config.timeout) as resp:
                    return resp.status, dict(resp.headers.items()), resp.read()
            except urllib.error.HTTPError as exc:     # an answer with an error status
                with exc:
                    return exc.code, dict(exc.headers.items()), exc.read()
        except urllib.error.URLError as exc:
            # raised while connecting or sending: the server has not acted on a request it did not get whole
            raise ConnectionFailed(f"{request.method} {request.url}: {exc.reason}", sent=False) from exc
        except (http.client.HTTPException, OSError) as exc:   # the answer was lost
            raise ConnectionFailed(f"{request.method} {request.url}: {exc!r}", sent=True) from exc
