"""Admin runs: POST /api/v1/admin/forget (seed 3.3.1 eviction, on demand) and
POST /api/v1/admin/tick (every time-driven rule now: quality deadline, stale rule, forget run, graph prune)."""

from __future__ import annotations

from aiohttp import web

from commands.error_codes import ErrorCode
from commands.parsing import NAMESPACE_RE, opt_int, opt_str, require_object
from commands.scheduler import SchedulerLag
from events.hlc import iso_from_ms
from gateway.http.appkeys import SCHEDULER, SETTINGS
from gateway.http.auth import require_admin
from gateway.http.errors import ApiError
from gateway.http.requests import json_body, json_response

MAX_CAPACITY = 10_000_000


def _dry_run(body: dict) -> bool:
    dry_run = body.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise ApiError(400, ErrorCode.INVALID_REQUEST, "dry_run: must be a boolean", {"field": "dry_run"})
    return dry_run


def _lag(exc: SchedulerLag) -> ApiError:
    return ApiError(504, ErrorCode.PROJECTION_LAG, "the projections are behind the log; retry",
                    {"after": exc.position, "projections": exc.projections})


def _forgotten(chosen) -> list[dict]:
    return [{"memory_id": c.memory_id, "namespace": c.namespace, "reason": c.reason} for c in chosen]


async def forget(request: web.Request) -> web.Response:
    """Evict what the rules say: quality_low, deprecated, then LRU above the per-namespace capacity.
    `dry_run` answers the plan without appending anything."""
    require_admin(request)
    body, _ = await json_body(request, required=False)
    body = require_object(body)
    capacity = opt_int(body, "capacity", minimum=1, maximum=MAX_CAPACITY,
                       default=request.app[SETTINGS].forget_capacity)
    namespace = opt_str(body, "namespace", max_chars=64, pattern=NAMESPACE_RE)
    dry_run = _dry_run(body)
    try:
        chosen, position = await request.app[SCHEDULER].forget(capacity=capacity, namespace=namespace,
                                                               dry_run=dry_run)
    except SchedulerLag as exc:
        raise _lag(exc) from None
    return json_response({"forgotten": _forgotten(chosen), "count": len(chosen), "capacity": capacity,
                          "dry_run": dry_run, "position": position})


async def tick(request: web.Request) -> web.Response:
    """Run the scheduler once now (its clock's now): the 7-day quality deadline, the 180-day stale
    rule, then a forget run. `dry_run` answers what it would decide."""
    require_admin(request)
    body, _ = await json_body(request, required=False)
    body = require_object(body)
    capacity = opt_int(body, "capacity", minimum=1, maximum=MAX_CAPACITY,
                       default=request.app[SETTINGS].forget_capacity)
    dry_run = _dry_run(body)
    try:
        report = await request.app[SCHEDULER].tick(dry_run=dry_run, capacity=capacity)
    except SchedulerLag as exc:
        raise _lag(exc) from None
    return json_response({
        "now": iso_from_ms(report.now_ms),
        "deprecated": [{"memory_id": d.memory_id, "namespace": d.namespace, "reason": d.reason}
                       for d in report.deprecated],
        "downweighted": [{"memory_id": d.memory_id, "namespace": d.namespace, "reason": d.reason}
                         for d in report.downweighted],
        "forgotten": _forgotten(report.forgotten),
        "pruned": {"removed_nodes": list(report.pruned.removed_nodes), "removed_edges": list(report.pruned.removed_edges),
                   "archived_edges": list(report.pruned.archived_edges),
                   "merged_edges": [list(m) for m in report.pruned.merged_edges]},
        "capacity": capacity, "dry_run": dry_run, "position": report.position})


def routes() -> list[web.RouteDef]:
    return [web.post("/api/v1/admin/forget", forget), web.post("/api/v1/admin/tick", tick)]
