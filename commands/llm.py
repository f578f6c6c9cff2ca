"""The LLM client: any OpenAI-compatible ``POST /v1/chat/completions`` endpoint (`LLM_ENDPOINT`,
`LLM_API_KEY`, `LLM_MODEL`), with a daily call budget kept in Redis (`ZHIYI_LLM_DAILY_LIMIT`).

Only reactions call it, and what it answers is recorded in events (DESIGN §3): replay never calls
a model. Request: ``{"model", "messages": [{"role", "content"}], "temperature": 0,
"response_format": {"type": "json_object"}}`` with ``Authorization: Bearer <key>``; the answer is
``choices[0].message.content``. Connection errors, timeouts, 5xx and 429 are retried with backoff;
another 4xx or a malformed body raises :class:`LLMError` at once. Over the day's budget,
:meth:`complete` raises :class:`BudgetExhausted` without calling the endpoint.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Any

import aiohttp
import orjson
import structlog

from events.clock import Clock, SystemClock
from projections.http_provider import Retryable, endpoint_url, error_message

log = structlog.get_logger(__name__)

BUDGET_KEY = "zhiyi:llm:calls:"      # + UTC date; expires after two days
DEFAULT_DAILY_LIMIT = 500


class LLMError(RuntimeError):
    """The endpoint refused the request or answered something unusable."""


class BudgetExhausted(LLMError):
    """The day's LLM call budget is spent."""


class ChatClient:
    backoff_s: tuple[float, ...] = (0.2, 0.8)

    def __init__(self, endpoint: str, model: str, api_key: str | None = None, *, redis: Any = None,
                 daily_limit: int = DEFAULT_DAILY_LIMIT, clock: Clock | None = None, timeout_s: float = 30.0,
                 retries: int = 2) -> None:
        self.url = endpoint_url(endpoint, "chat/completions")
        self.model = model
        self.model_id = f"http:{model}"
        self.redis = redis
        self.daily_limit = daily_limit
        self.clock = clock or SystemClock()
        self.timeout_s = timeout_s
        self.retries = retries
        self._api_key = api_key
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout_s))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _spend(self) -> None:
        """Count one call against today's budget (UTC day of the clock)."""
        if self.redis is None or self.daily_limit <= 0:
            return
        day = datetime.fromtimestamp(self.clock.now_ms() / 1000, tz=timezone.utc).strftime("%Y-%m-%d")
        key = BUDGET_KEY + day
        pipe = self.redis.pipeline(transaction=True)
        pipe.incr(key)
        pipe.expire(key, 2 * 86_400)
        used, _ = await pipe.execute()
        if int(used) > self.daily_limit:
            raise BudgetExhausted(f"the daily LLM budget ({self.daily_limit} calls) is spent")

    async def complete(self, system: str, user: str) -> str:
        """The model's answer to one system + user message pair (JSON mode requested)."""
        await self._spend()
        body = orjson.dumps({"model": self.model, "temperature": 0,
                             "response_format": {"type": "json_object"},
                             "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]})
        for attempt in range(self.retries + 1):
            try:
                raw = await self._post(body)
                break
            except Retryable as exc:
                if attempt >= self.retries:
                    raise LLMError(f"LLM request to {self.url} failed after {attempt + 1} attempts: {exc}") from exc
                log.warning("llm.http_retry", url=self.url, attempt=attempt + 1, error=str(exc))
                await asyncio.sleep(self.backoff_s[min(attempt, len(self.backoff_s) - 1)])
        try:
            content = orjson.loads(raw)["choices"][0]["message"]["content"]
        except Exception as exc:
            raise LLMError(f"malformed chat completion from {self.url}: {exc}") from exc
        if not isinstance(content, str):
            raise LLMError(f"malformed chat completion from {self.url}: content is not a string")
        return content

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
            raise LLMError(f"LLM endpoint returned HTTP {status}: {error_message(data)}")
        return data
