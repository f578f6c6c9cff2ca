"""Shared plumbing of the HTTP model providers (embeddings, rerank, the LLM client)."""

from __future__ import annotations

import asyncio

import aiohttp
import orjson
import structlog

log = structlog.get_logger(__name__)


def endpoint_url(endpoint: str, route: str) -> str:
    """Accept a base URL (``http://h:8000``, ``http://h:8000/v1``) or the full ``/v1/<route>`` URL."""
    url = endpoint.strip().rstrip("/")
    if url.endswith(f"/v1/{route}"):
        return url
    if url.endswith("/v1"):
        return f"{url}/{route}"
    return f"{url}/v1/{route}"


def error_message(body: bytes) -> str:
    """Extract a human message from an error body (OpenAI-style, ``detail`` or plain text)."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body.decode("utf-8", "replace")[:500]
    if isinstance(doc, dict):
        err = doc.get("error", doc)
        if isinstance(err, dict) and "message" in err:
            return str(err["message"])
        if isinstance(err, str):
            return err
        if "detail" in doc:
            return str(doc["detail"])
    return body.decode("utf-8", "replace")[:500]


class Retryable(Exception):
    """A failure worth retrying (connection error, timeout, 5xx, 429)."""


class JsonPoster:
    """An async JSON-over-HTTP provider client: an aiohttp session opened on first use (inside the
    running loop) and closed by :meth:`close`; one POST classified as retryable (connection error,
    timeout, 5xx, 429: retried with backoff) or fatal (another 4xx: ``error_cls`` at once).
    Subclasses say what they post and how they read the answer (rerank, LLM)."""

    backoff_s: tuple[float, ...] = (0.2, 0.8)
    error_cls: type[Exception] = RuntimeError
    what: str = "provider"            # for messages and the retry log event

    def __init__(self, url: str, api_key: str | None, timeout_s: float, retries: int) -> None:
        if retries < 0:
            raise ValueError("retries must be >= 0")
        self.url = url
        self.timeout_s = timeout_s
        self.retries = retries
        self._api_key = api_key
        self._session: aiohttp.ClientSession | None = None
        self.requests = 0  # successful HTTP round trips, for diagnostics

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout_s))
        return self._session

    async def close(self) -> None:
        """Close the HTTP session (a later call opens a new one)."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def post_json(self, body: bytes) -> bytes:
        """POST `body`, retrying what is retryable; the raw answer of the first success."""
        for attempt in range(self.retries + 1):
            try:
                return await self._post(body)
            except Retryable as exc:
                if attempt >= self.retries:
                    raise self.error_cls(f"{self.what} request to {self.url} failed after {attempt + 1} attempts: "
                                         f"{exc}") from exc
                log.warning(f"{self.what}.http_retry", url=self.url, attempt=attempt + 1, error=str(exc))
                await asyncio.sleep(self.backoff_s[min(attempt, len(self.backoff_s) - 1)])
        raise AssertionError("unreachable")

    async def _post(self, body: bytes) -> bytes:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        try:
            async with self._client().post(self.url, data=body, headers=headers) as resp:
                data, status = await resp.read(), resp.status
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            raise Retryable(f"{type(exc).__name__}: {exc}") from exc
        if status >= 500 or status == 429:
            raise Retryable(f"HTTP {status}: {error_message(data)}")
        if status >= 400:
            raise self.error_cls(f"{self.what} endpoint returned HTTP {status}: {error_message(data)}")
        self.requests += 1
        return data
