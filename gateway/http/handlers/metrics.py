"""GET /api/v1/metrics/self (admin): the seven self-metrics of seed 3.2.3 on the scheduler clock's
day, with their health bands and a trend over the last `days` days (`projections.metrics`)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from aiohttp import web

from gateway.http.appkeys import CLOCK, METRICS, STORE
from gateway.http.auth import require_admin
from gateway.http.requests import after_param, json_response, query_int, wait_for_projections
from projections.metrics.self_metrics import self_metrics

MAX_DAYS = 90


def day_range(now_ms: int, days: int) -> list[str]:
    """The `days` UTC dates ending on `now_ms`'s, ascending."""
    today = datetime.fromtimestamp(now_ms / 1000, tz=timezone.utc).date()
    return [(today - timedelta(days=n)).isoformat() for n in range(days - 1, -1, -1)]


async def self_panel(request: web.Request) -> web.Response:
    require_admin(request)
    query = dict(request.query)
    days = day_range(request.app[CLOCK].now_ms(), query_int(request, "days", default=MAX_DAYS, minimum=1,
                                                            maximum=MAX_DAYS))
    reader = request.app[METRICS]
    await wait_for_projections(request, after_param(request, query), reader.reads)
    daily = await reader.daily(days[0], days[-1])
    return json_response({"day": days[-1], "metrics": self_metrics(days, daily),
                          "counts": daily.get(days[-1], {}),
                          "position": await request.app[STORE].checkpoint("metrics")})


def routes() -> list[web.RouteDef]:
    return [web.get("/api/v1/metrics/self", self_panel)]
