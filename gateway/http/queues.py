"""What waits, as `/api/v1/stats` (the admin's `queues`) and `/metrics` report it: episodes by
distillation status (`processing`: the distillation queue), open conflicts, the reactions' dead letters."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from events.redis.counters import Counters
from gateway.http.appkeys import CONFLICTS, EPISODES, STORE


async def queues(app: web.Application) -> dict[str, Any]:
    episodes = await app[EPISODES].counts()
    _, open_conflicts = await app[CONFLICTS].page(None, "open", 1, 0)
    return {"distill_queue": episodes.get("processing", 0), "episodes": episodes, "conflicts_open": open_conflicts,
            "reactions_dead_letters": await Counters(app[STORE].redis).dead_letters()}
