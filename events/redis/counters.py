"""Counters and flags that commands keep in Redis beside the log (not events: they are never replayed).

- the LLM daily call budgets (`keys.llm_calls`): one counter per budget and UTC day, expiring after two days;
- the PassiveValidator's partial overlaps (`keys.validator_partials`): per memory, a sorted set of
  the commits that partially overlapped it, scored by their time, so a redelivered commit keeps
  its rank;
- whether a memory's quality notice is open (`notice` in its write-side index hash, set by the
  append itself, `events.redis.indexes`).
"""

from __future__ import annotations

from dataclasses import dataclass

from redis.asyncio import Redis

from events.redis import keys

LLM_CALLS_TTL_S = 2 * 86_400


@dataclass
class Counters:
    redis: Redis

    async def count_llm_call(self, day: str, budget: str = "") -> int:
        """Count one LLM call on `day` (UTC, "YYYY-MM-DD") against `budget`; returns the day's calls so far,
        this one included."""
        key = keys.llm_calls(day, budget)
        pipe = self.redis.pipeline(transaction=True)
        pipe.incr(key)
        pipe.expire(key, LLM_CALLS_TTL_S)
        used, _ = await pipe.execute()
        return int(used)

    async def llm_calls(self, day: str, budget: str = "") -> int:
        """The LLM calls counted on `day` against `budget` so far."""
        value = await self.redis.get(keys.llm_calls(day, budget))
        return int(value) if value else 0

    async def dead_letters(self) -> int:
        """Entries in the reactions' dead-letter stream."""
        return int(await self.redis.xlen(keys.REACTIONS_DEAD))

    async def rank_partial(self, memory_id: str, cause: str, score: float, ttl_s: int) -> int | None:
        """Record `cause` (scored `score`, its time) as a partial overlap of the memory, keeping the set
        `ttl_s` more seconds; returns its 0-based rank among the memory's partials (None if absent).
        Idempotent: recording a cause again keeps its rank."""
        key = keys.validator_partials(memory_id)
        pipe = self.redis.pipeline(transaction=True)
        pipe.zadd(key, {cause: score})
        pipe.expire(key, ttl_s)
        pipe.zrank(key, cause)
        _, _, rank = await pipe.execute()
        return None if rank is None else int(rank)

    async def quality_notice_open(self, memory_id: str) -> bool:
        """Whether the memory's write-side index says a quality notice is open (`notice` = 1)."""
        return await self.redis.hget(keys.memory(memory_id), "notice") in (b"1", "1")
