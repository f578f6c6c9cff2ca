"""The LLM client: any OpenAI-compatible ``POST /v1/chat/completions`` endpoint (`LLM_ENDPOINT`,
`LLM_API_KEY`, `LLM_MODEL`), with a daily call budget kept in Redis (`ZHIYI_LLM_DAILY_LIMIT`).

Only reactions call it, and what it answers is recorded in events (DESIGN §3): replay never calls
a model. Each client counts against its own daily budget (`budget`: entity extraction the general
one, distillation `ZHIYI_LLM_DISTILL_DAILY_LIMIT`). Request: ``{"model", "messages": [{"role", "content"}], "temperature": 0,
"response_format": {"type": "json_object"}}`` with ``Authorization: Bearer <key>``; the answer is
``choices[0].message.content``. Connection errors, timeouts, 5xx and 429 are retried with backoff;
another 4xx or a malformed body raises :class:`LLMError` at once. Over the day's budget,
:meth:`complete` raises :class:`BudgetExhausted` without calling the endpoint.
"""

from __future__ import annotations

from datetime import datetime, timezone

import orjson

from events.clock import Clock, SystemClock
from events.redis.counters import Counters
from projections.models.http_poster import JsonPoster, endpoint_url

DEFAULT_DAILY_LIMIT = 500


class LLMError(RuntimeError):
    """The endpoint refused the request or answered something unusable."""


class BudgetExhausted(LLMError):
    """The day's LLM call budget is spent."""


class ChatClient(JsonPoster):
    error_cls = LLMError
    what = "llm"

    def __init__(self, endpoint: str, model: str, api_key: str | None = None, *, counters: Counters | None = None,
                 daily_limit: int = DEFAULT_DAILY_LIMIT, clock: Clock | None = None, timeout_s: float = 30.0,
                 retries: int = 2, budget: str = "") -> None:
        super().__init__(endpoint_url(endpoint, "chat/completions"), api_key, timeout_s, retries)
        self.model = model
        self.model_id = f"http:{model}"
        self.counters = counters
        self.daily_limit = daily_limit
        self.clock = clock or SystemClock()
        self.budget = budget              # which daily budget its calls count against ("" = the general one)

    async def _spend(self) -> None:
        """Count one call against today's budget (UTC day of the clock; `events.redis.keys.llm_calls`)."""
        if self.counters is None or self.daily_limit <= 0:
            return
        day = datetime.fromtimestamp(self.clock.now_ms() / 1000, tz=timezone.utc).strftime("%Y-%m-%d")
        if await self.counters.count_llm_call(day, self.budget) > self.daily_limit:
            raise BudgetExhausted(f"the daily LLM budget{' for ' + self.budget if self.budget else ''} "
                                  f"({self.daily_limit} calls) is spent")

    async def complete(self, system: str, user: str, *, charge: bool = True) -> str:
        """The model's answer to one system + user message pair (JSON mode requested). `charge=False`:
        not counted against the budget (seed 3.1: an explicit "remember this" is never held back)."""
        if charge:
            await self._spend()
        body = orjson.dumps({"model": self.model, "temperature": 0,
                             "response_format": {"type": "json_object"},
                             "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]})
        raw = await self.post_json(body)
        try:
            content = orjson.loads(raw)["choices"][0]["message"]["content"]
        except Exception as exc:
            raise LLMError(f"malformed chat completion from {self.url}: {exc}") from exc
        if not isinstance(content, str):
            raise LLMError(f"malformed chat completion from {self.url}: content is not a string")
        return content
