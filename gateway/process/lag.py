"""How far this process's reads are behind the log it serves: /health, the heartbeats of gateways and
replicas (`GET /api/v1/instances`)."""

from __future__ import annotations

from typing import Any

from events import positions
from events.redis.instances import Instances
from events.redis.store import EventStore

LAG_CAP = 10_000


async def lag(store: EventStore, last: str | None, projectors: dict[str, dict]) -> dict[str, Any]:
    """The slowest projection's `position` (the lowest checkpoint: what reads can reach), `lag_ms`
    (stream time) and `lag_events` (events after it, counted up to 10,000); None while a projector has
    no checkpoint."""
    cps = [p["position"] for p in projectors.values()]
    if not cps or None in cps:
        return {"position": None, "lag_ms": 0 if not last else None, "lag_events": 0 if not last else None}
    slowest = min(cps, key=positions.key)
    if not last:
        return {"position": slowest, "lag_ms": 0, "lag_events": 0}
    return {"position": slowest, "lag_ms": max(p["lag_ms"] or 0 for p in projectors.values()),
            "lag_events": await Instances(store.redis).lag_events(slowest, LAG_CAP)}
