"""Instances: which zhiyi processes run, and which stopped (seed 4.1, 4.3).

Each process (a gateway, a projector process, later a replica) beats every 10 s: the key
`zhiyi:heartbeat:{instance_id}:{role}` (30 s expiry) holds its process token, the epoch it serves and
what it runs, and the hash `zhiyi:instances` keeps its last record (version, position, last seen), so
a process whose key expired is listed `down`; records not seen for 7 days are dropped. A process
`claim`s its key at start: while another live process holds the same (instance id, role), the claim
fails and the process refuses to start.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson
from redis.asyncio import Redis

from events.redis import keys

TTL_S = 30
DROP_AFTER_MS = 7 * 86_400_000

_RELEASE = """
local held = redis.call('GET', KEYS[1])
if held and cjson.decode(held)['token'] == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass
class Instances:
    redis: Redis
    token: str = field(default_factory=lambda: uuid.uuid4().hex)   # this process

    async def claim(self, instance_id: str, role: str, info: str = "", epoch: str = "") -> dict[str, Any] | None:
        """Take (instance_id, role) for this process: None, or the live holder's heartbeat when another
        process holds it."""
        key = keys.heartbeat(instance_id, role)
        if await self.redis.set(key, self._value(info, epoch), nx=True, ex=TTL_S):
            return None
        held = await self.redis.get(key)
        if held is None:      # expired meanwhile
            return await self.claim(instance_id, role, info, epoch)
        holder = orjson.loads(held)
        return None if holder.get("token") == self.token else holder

    async def beat(self, instance_id: str, role: str, record: dict[str, Any], *, now_ms: int, info: str = "",
                   epoch: str = "") -> None:
        """The heartbeat key (30 s) and the instance's record in `zhiyi:instances`."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.set(keys.heartbeat(instance_id, role), self._value(info, epoch), ex=TTL_S)
        pipe.hset(keys.INSTANCES, f"{instance_id}:{role}", orjson.dumps(
            {**record, "instance_id": instance_id, "role": role, "last_seen_ms": now_ms}))
        await pipe.execute()

    async def release(self, instance_id: str, role: str) -> None:
        """A clean stop: the key goes at once (only this process's own)."""
        await self.redis.eval(_RELEASE, 1, keys.heartbeat(instance_id, role), self.token)

    async def records(self, now_ms: int) -> list[dict[str, Any]]:
        """Every known instance with `status` up (its key lives) or down; those not seen for 7 days
        are dropped from the hash."""
        raw = await self.redis.hgetall(keys.INSTANCES)
        records = sorted((orjson.loads(v) for v in raw.values()), key=lambda r: (r["instance_id"], r["role"]))
        stale = [f"{r['instance_id']}:{r['role']}" for r in records if now_ms - int(r["last_seen_ms"]) > DROP_AFTER_MS]
        if stale:
            await self.redis.hdel(keys.INSTANCES, *stale)
        live = [r for r in records if f"{r['instance_id']}:{r['role']}" not in stale]
        pipe = self.redis.pipeline(transaction=False)
        for r in live:
            pipe.exists(keys.heartbeat(r["instance_id"], r["role"]))
        alive = await pipe.execute() if live else []
        return [{**r, "status": "up" if up else "down"} for r, up in zip(live, alive)]

    async def lag_events(self, position: str | None, cap: int = 10_000) -> int:
        """Log entries after `position` (all when None), counted up to `cap` (a lag, not an audit)."""
        reply = await self.redis.xrange(keys.STREAM, f"({position}" if position else "-", "+", count=cap)
        return len(reply or [])

    async def ttl_ms(self, instance_id: str, role: str) -> int:
        """What is left of the heartbeat (ms; negative: none)."""
        return int(await self.redis.pttl(keys.heartbeat(instance_id, role)))

    async def take_over(self, instance_id: str, role: str, info: str = "", epoch: str = "") -> None:
        """Take a heartbeat its holder stopped refreshing (a dead process's, not yet expired)."""
        await self.redis.set(keys.heartbeat(instance_id, role), self._value(info, epoch), ex=TTL_S)

    async def heartbeat(self, instance_id: str, role: str) -> dict[str, Any] | None:
        held = await self.redis.get(keys.heartbeat(instance_id, role))
        return orjson.loads(held) if held else None

    def _value(self, info: str, epoch: str) -> bytes:
        return orjson.dumps({"token": self.token, "info": info, "epoch": epoch or "-"})
