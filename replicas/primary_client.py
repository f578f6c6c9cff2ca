"""A LAN replica's HTTP client to its primary: forwarded writes, pushed operations, the handshake.

Two failures are told apart, because they answer differently:
- `PrimaryUnreachable`: nothing was sent (no connection could be made within the connect timeout).
  A write answers 503 `primary_unreachable` with `Retry-After`; a feedback vote is buffered.
- `PrimaryOutcomeUnknown`: the request was sent, its answer was lost. The write may have landed: it
  answers 503 `outcome_unknown` ("retry with the same Idempotency-Key").
Both are `ConnectionError`s, so background loops retry them (`events.redis.client.TRANSIENT_ERRORS`).

Connections are not kept alive: each request opens its own (a LAN round trip), so a partition shows
as a failed connect, never as a pooled connection found dead after the request was written.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Mapping

import aiohttp
import orjson
import structlog

log = structlog.get_logger(__name__)

FORWARDED_REQUEST_HEADERS = ("Content-Type", "Content-Encoding", "X-API-Key", "Authorization", "Idempotency-Key",
                             "X-Zhiyi-After", "Accept")
FORWARDED_RESPONSE_HEADERS = ("Content-Type", "Retry-After", "Allow", "Location")
CONNECT_TIMEOUT_S = 2.0
REQUEST_TIMEOUT_S = 60.0


class PrimaryUnreachable(ConnectionError):
    """No connection to the primary: nothing was sent."""


class PrimaryOutcomeUnknown(ConnectionError):
    """The request was sent to the primary; its answer was lost (it may have been applied)."""


@dataclass(frozen=True, slots=True)
class Forwarded:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass
class PrimaryClient:
    base_url: str                    # http://primary:7821 (no trailing slash)
    instance_id: str                 # this replica
    replica_key: str                 # issued by the primary's admin (POST /api/v1/admin/replicas)
    connect_timeout_s: float = CONNECT_TIMEOUT_S
    timeout_s: float = REQUEST_TIMEOUT_S
    reachable: bool | None = None    # the last request's outcome (None: none made yet)
    last_error: str = ""
    _session: aiohttp.ClientSession | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            timeout = aiohttp.ClientTimeout(total=self.timeout_s, sock_connect=self.connect_timeout_s,
                                            connect=self.connect_timeout_s)
            self._session = aiohttp.ClientSession(timeout=timeout, auto_decompress=False,
                                                  connector=aiohttp.TCPConnector(force_close=True))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def request(self, method: str, path_qs: str, headers: Mapping[str, str], body: bytes) -> Forwarded:
        """Send one request; PrimaryUnreachable / PrimaryOutcomeUnknown as the module doc says."""
        url = self.base_url + path_qs
        try:
            async with self._client().request(method, url, headers=dict(headers), data=body or None,
                                              allow_redirects=False) as resp:
                payload = await resp.read()
                out = Forwarded(resp.status, {h: resp.headers[h] for h in FORWARDED_RESPONSE_HEADERS
                                              if h in resp.headers}, payload)
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as exc:
            self._failed(exc)
            raise PrimaryUnreachable(f"the primary {self.base_url} cannot be reached: {exc}") from exc
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            self._failed(exc)
            raise PrimaryOutcomeUnknown(f"the primary {self.base_url} did not answer: "
                                        f"{type(exc).__name__}: {exc}") from exc
        self.reachable, self.last_error = True, ""
        return out

    def _failed(self, exc: BaseException) -> None:
        self.reachable, self.last_error = False, f"{type(exc).__name__}: {exc}"

    async def forward(self, method: str, path_qs: str, headers: Mapping[str, str], body: bytes,
                      client_ip: str = "") -> Forwarded:
        """A caller's write, as it came (its key, Idempotency-Key and body), to the primary."""
        sent = {h: headers[h] for h in FORWARDED_REQUEST_HEADERS if h in headers}
        sent["X-Zhiyi-Forwarded-By"] = self.instance_id
        if client_ip:
            sent["X-Forwarded-For"] = client_ip
        return await self.request(method, path_qs, sent, body)

    async def push(self, ops: list[dict[str, Any]], status: dict[str, Any] | None) -> dict[str, Any]:
        """POST this replica's operations (and heartbeat) to the primary; its answer, parsed. A 4xx/5xx
        answer raises RuntimeError (a 5xx is retried by the caller; a 4xx means a bug or a revoked key)."""
        body: dict[str, Any] = {"ops": ops}
        if status is not None:
            body["status"] = status
        got = await self.request("POST", f"/api/v1/replicas/{self.instance_id}/ops",
                                 {"Content-Type": "application/json", "X-API-Key": self.replica_key},
                                 orjson.dumps(body))
        if got.status != 200:
            raise PushRefused(got.status, got.body.decode(errors="replace")[:500])
        return orjson.loads(got.body)

    async def health(self) -> dict[str, Any]:
        got = await self.request("GET", "/health", {}, b"")
        return orjson.loads(got.body) if got.body else {}


class PushRefused(RuntimeError):
    """The primary answered a push with an error status."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"the primary answered {status}: {body}")
        self.status = status
