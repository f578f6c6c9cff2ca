"""Per-agent rate limits (seed 2.7): two token buckets per agent, `read` and `write`, with quotas by
the agent's type (`hermes`, `openclaw`, `cron`, anything else: `default`).

`ZHIYI_RATE_LIMITS` (read once by the settings) is `off`, or a JSON object that replaces the quotas of
the types it names: `{"hermes": {"read": [10, 20], "write": [2, 5]}, "default": {...}}` — each pair is
`[rate per second, burst]`. Unset: the seed's quotas. A type the object does not name keeps the
seed's; an agent whose type has no quota of its own gets `default`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import orjson

KINDS = ("read", "write")
DEFAULT = "default"


@dataclass(frozen=True, slots=True)
class Quota:
    rate: float       # tokens added per second
    burst: int        # bucket size: requests allowed at once after a quiet spell

    def as_dict(self) -> dict[str, float | int]:
        return {"rate": self.rate, "burst": self.burst}


@dataclass(frozen=True, slots=True)
class Quotas:
    read: Quota
    write: Quota

    def of(self, kind: str) -> Quota:
        return self.read if kind == "read" else self.write

    def as_dict(self) -> dict[str, dict[str, float | int]]:
        return {"read": self.read.as_dict(), "write": self.write.as_dict()}


SEED_QUOTAS: dict[str, Quotas] = {
    "hermes": Quotas(Quota(10, 20), Quota(2, 5)),
    "openclaw": Quotas(Quota(10, 20), Quota(2, 5)),
    "cron": Quotas(Quota(5, 10), Quota(1, 3)),
    DEFAULT: Quotas(Quota(5, 10), Quota(1, 3)),
}


@dataclass(frozen=True, slots=True)
class RateLimits:
    """The quotas by agent type (a missing type: `default`'s)."""

    by_type: Mapping[str, Quotas] = field(default_factory=lambda: dict(SEED_QUOTAS))

    def for_agent(self, agent_type: str) -> Quotas:
        return self.by_type.get(agent_type) or self.by_type[DEFAULT]

    @classmethod
    def parse(cls, text: str | None) -> "RateLimits | None":
        """`ZHIYI_RATE_LIMITS`: unset → the seed's quotas; `off` → None (no limits); JSON → those
        quotas over the seed's. ValueError with what is wrong."""
        text = (text or "").strip()
        if not text:
            return cls()
        if text.lower() == "off":
            return None
        try:
            raw = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"ZHIYI_RATE_LIMITS must be 'off' or a JSON object: {exc}") from None
        if not isinstance(raw, dict):
            raise ValueError("ZHIYI_RATE_LIMITS must be 'off' or a JSON object of agent types")
        quotas = dict(SEED_QUOTAS)
        for agent_type, kinds in raw.items():
            quotas[agent_type] = _quotas(agent_type, kinds, quotas.get(agent_type) or SEED_QUOTAS[DEFAULT])
        return cls(quotas)


def _quotas(agent_type: str, kinds: Any, base: Quotas) -> Quotas:
    if not isinstance(kinds, dict) or not kinds or set(kinds) - set(KINDS):
        raise ValueError(f"ZHIYI_RATE_LIMITS[{agent_type!r}] must be an object with read and/or write")
    read, write = (_quota(agent_type, k, kinds[k]) if k in kinds else base.of(k) for k in KINDS)
    return Quotas(read, write)


def _quota(agent_type: str, kind: str, pair: Any) -> Quota:
    if (not isinstance(pair, list) or len(pair) != 2 or any(isinstance(x, bool) for x in pair)
            or not isinstance(pair[0], (int, float)) or not isinstance(pair[1], int)
            or not 0 < pair[0] <= 100_000 or not 1 <= pair[1] <= 1_000_000):
        raise ValueError(f"ZHIYI_RATE_LIMITS[{agent_type!r}][{kind!r}] must be [rate per second (> 0), "
                         "burst (an integer >= 1)]")
    return Quota(float(pair[0]), int(pair[1]))


@dataclass
class RateLimiter:
    """Charges an agent's request to its bucket of `kind` at its type's quota."""

    limits: RateLimits
    buckets: Any                     # events.redis.rate_buckets.TokenBuckets
    store: Any                       # events.redis.store.EventStore (the agents' types)
    _types: dict[str, str] = field(default_factory=dict)

    async def quotas(self, agent_id: str) -> Quotas | None:
        """The agent's quotas (None: no such agent: the request fails on its own)."""
        agent_type = self._types.get(agent_id)
        if agent_type is None:
            index = await self.store.agent_index(agent_id)
            if index is None:
                return None
            agent_type = self._types[agent_id] = index.agent_type
            if len(self._types) > 100_000:
                self._types.clear()
        return self.limits.for_agent(agent_type)

    async def take(self, agent_id: str, kind: str) -> tuple[Quota, Any] | None:
        """(the quota charged, events.redis.rate_buckets.Taken); None when the agent is unknown."""
        quotas = await self.quotas(agent_id)
        if quotas is None:
            return None
        quota = quotas.of(kind)
        return quota, await self.buckets.take(agent_id, kind, quota.rate, quota.burst)
