"""How long a replica's Redis has been cut off from the primary's (INFO replication), read at most
once a second: /health's `link`, and the key check's grace (a replica cut off for longer than
`ZHIYI_REPLICA_AUTH_GRACE_S` cannot know whether a key was rotated or revoked meanwhile)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from redis.asyncio import Redis

from events.redis import server_info

CACHE_S = 1.0


@dataclass
class LinkStatus:
    redis: Redis                     # the replica's log Redis (replicaof the primary's)
    _down_s: float = field(default=0.0, init=False)
    _read_at: float = field(default=-CACHE_S, init=False)

    async def down_for_s(self) -> float:
        """Seconds the link has been down (0 while up); unknown (its Redis away) counts as down for ever."""
        now = time.monotonic()
        if now - self._read_at >= CACHE_S:
            self._down_s = await self._read()
            self._read_at = now
        return self._down_s

    async def _read(self) -> float:
        try:
            info = await server_info.replication(self.redis)
        except Exception:  # noqa: BLE001 - its own Redis unreachable: nothing can be checked
            return float("inf")
        if info.get("master_link_status") == "up":
            return 0.0
        try:
            return float(info.get("master_link_down_since_seconds", "inf"))
        except ValueError:
            return float("inf")
