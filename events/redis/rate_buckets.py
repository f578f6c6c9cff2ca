"""Per-agent token buckets in Redis (seed 2.7): one Lua call takes a token (or says when one will be
there), on Redis's clock, so every gateway of a deployment shares the same buckets. A bucket is a hash
`zhiyi:rate:{agent}:{kind}` {tokens, ts} that expires once it would be full again."""

from __future__ import annotations

from dataclasses import dataclass

from redis.asyncio import Redis

from events.redis import keys
from events.redis.replies import as_str

_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate, burst, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local h = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens, ts = tonumber(h[1]), tonumber(h[2])
if tokens == nil or ts == nil then tokens, ts = burst, now end
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate / 1000)
local allowed, wait_ms = 0, 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
else
  wait_ms = math.ceil((cost - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.6f', tokens), 'ts', now)
local full_ms = math.ceil((burst - tokens) * 1000 / rate)
redis.call('PEXPIRE', KEYS[1], full_ms + 1000)
return {allowed, string.format('%.6f', tokens), wait_ms, now, full_ms}
"""


@dataclass(frozen=True, slots=True)
class Taken:
    allowed: bool
    remaining: int          # whole tokens left
    retry_after_ms: int     # refused: when the next token is there
    reset_ms: int           # unix ms when the bucket is full again


class TokenBuckets:
    def __init__(self, redis: Redis) -> None:
        self._script = redis.register_script(_TAKE)

    async def take(self, agent_id: str, kind: str, rate: float, burst: int, cost: int = 1) -> Taken:
        allowed, tokens, wait_ms, now, full_ms = await self._script(keys=[keys.rate_bucket(agent_id, kind)],
                                                                   args=[rate, burst, cost])
        return Taken(int(allowed) == 1, int(float(as_str(tokens))), int(wait_ms), int(now) + int(full_ms))
