"""GET /api/v1/instances (admin): every zhiyi process that heartbeats (gateways, projector processes,
LAN replicas through their primary), up or down, with how far its reads are behind the log (`events.redis.instances`)."""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from events import positions
from events.hlc import iso_from_ms
from events.redis.instances import Instances
from events.redis.store import EventStore
from gateway.http.appkeys import STORE
from gateway.http.auth import require_admin
from gateway.http.requests import json_response

LAG_CAP = 10_000


async def instance_rows(store: EventStore) -> tuple[list[dict[str, Any]], str | None]:
    """Every instance's row (see the module doc) and the log's last position."""
    instances = Instances(store.redis)
    records = await instances.records(int(time.time() * 1000))
    last = await store.last_position()
    out = []
    for r in records:
        position = r.get("position")
        lag_ms = max(0, positions.key(last)[0] - positions.key(position)[0]) if last and position else None
        lag_events = await instances.lag_events(position, LAG_CAP) if last and position else None
        out.append({"instance_id": r["instance_id"], "role": r["role"], "status": r["status"],
                    "last_seen": iso_from_ms(int(r["last_seen_ms"])), "version": r.get("version"),
                    "position": position, "lag_events": lag_events, "lag_ms": lag_ms, "url": r.get("url")})
    return out, last


async def listing(request: web.Request) -> web.Response:
    require_admin(request)
    rows, last = await instance_rows(request.app[STORE])
    return json_response({"instances": rows, "log": {"last_position": last}})


def routes() -> list[web.RouteDef]:
    return [web.get("/api/v1/instances", listing)]
