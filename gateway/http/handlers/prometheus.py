"""GET /metrics (admin key as `X-API-Key` or `Authorization: Bearer`): the seed 4.3 series in the
Prometheus text format, read from the live state at each scrape."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timezone

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from events.redis.counters import Counters
from gateway.http.appkeys import (
    CLOCK, CONSOLIDATION_READER, METRICS, QUERIES, READER, RECALL_CACHE, SETTINGS, STORE, TELEMETRY,
)
from gateway.http.auth import require_admin
from gateway.http.handlers.instances import instance_rows
from gateway.http.queues import queues


async def scrape(request: web.Request) -> web.Response:
    require_admin(request)
    app, t = request.app, request.app[TELEMETRY]
    settings, store = app[SETTINGS], app[STORE]
    t.uptime.set(time.monotonic() - t.started)
    waiting = await queues(app)
    t.distill_queue.set(waiting["distill_queue"])
    t.conflicts.set(waiting["conflicts_open"])
    t.dead_letters.set(waiting["reactions_dead_letters"])
    t.vectors.set(await asyncio.to_thread(app[READER].count))
    day = datetime.fromtimestamp(app[CLOCK].now_ms() / 1000, tz=timezone.utc).strftime("%Y-%m-%d")
    counters = Counters(store.redis)
    for budget, limit in (("", settings.llm_daily_limit), ("distill", settings.llm_distill_daily_limit)):
        t.llm_calls.labels(budget or "general").set(await counters.llm_calls(day, budget))
        t.llm_limit.labels(budget or "general").set(limit)
    consolidation = app[CONSOLIDATION_READER]
    runs, steps, triggers = await asyncio.to_thread(
        lambda: (consolidation.runs(1), consolidation.steps(), consolidation.triggers()))
    if runs:
        t.consolidate_duration.set(((runs[0]["report"] or {}).get("duration_ms") or 0) / 1000)
    for step, state in steps.items():
        t.consolidate_failures.labels(step).set(state["failures"])
    for name, state in triggers.items():
        t.trigger_failures.labels(name).set(state["failures"])
        t.trigger_paused.labels(name).set(1 if state["paused"] else 0)
    _, projectors = await app[QUERIES].stats.projectors()
    for name, state in projectors.items():   # no checkpoint yet: NaN (unknown), not 0
        t.lag.labels(name, settings.instance_id).set(float("nan") if state["lag_ms"] is None
                                                     else state["lag_ms"] / 1000)
    rows, _ = await instance_rows(store)      # the other processes' figures: their heartbeats
    for row in rows:
        labels = (row["instance_id"], row["role"])
        t.instance_up.labels(*labels).set(1 if row["status"] == "up" else 0)
        t.instance_lag.labels(*labels).set(float("nan") if row["lag_ms"] is None else row["lag_ms"] / 1000)
        t.instance_lag_events.labels(*labels).set(float("nan") if row["lag_events"] is None else row["lag_events"])
    for event_type, n in (await app[METRICS].event_types()).items():
        t.events.labels(event_type).set(n)
    cache = app[RECALL_CACHE]
    lookups = cache.hits + cache.misses
    t.cache_ratio.set(cache.hits / lookups if lookups else 0.0)
    return web.Response(body=generate_latest(t.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})


def routes() -> list[web.RouteDef]:
    return [web.get("/metrics", scrape)]
