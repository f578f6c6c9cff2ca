"""Triggers and deep consolidation (seed 6.4, 3.5 flow 5), admin only:
GET /api/v1/triggers, POST /api/v1/admin/triggers/{name}/pause|resume, POST /api/v1/admin/triggers/run,
GET /api/v1/consolidation, POST /api/v1/admin/consolidate,
POST /api/v1/admin/consolidation/steps/{step}/enable."""

from __future__ import annotations

import asyncio

from aiohttp import web

from commands.consolidation.service import STEPS, ConsolidationLag, UnknownStep
from commands.error_codes import ErrorCode
from commands.parsing import opt_str, require_object
from commands.triggers.service import TriggerLag, UnknownTrigger
from commands.triggers.specs import BY_NAME
from events.hlc import iso_from_ms
from gateway.http.appkeys import CLOCK, CONSOLIDATION, CONSOLIDATION_READER, TRIGGERS
from gateway.http.auth import require_admin
from gateway.http.errors import ApiError
from gateway.http.requests import after_param, json_body, json_response, query_int, wait_for_projections

REASON_CHARS = 500
MAX_RUNS = 100


def _lag(exc: Exception) -> ApiError:
    return ApiError(504, ErrorCode.PROJECTION_LAG, f"{exc}; retry", {})


def _name(request: web.Request) -> str:
    name = request.match_info["name"]
    if name not in BY_NAME:
        raise ApiError(404, ErrorCode.NOT_FOUND, f"no trigger named {name!r}", {"known": list(BY_NAME)})
    return name


async def listing(request: web.Request) -> web.Response:
    """Every trigger, urgency descending: its condition, cooldown, urgency, last firing, pause and failures."""
    require_admin(request)
    try:
        triggers = await request.app[TRIGGERS].entries()
    except TriggerLag as exc:
        raise _lag(exc) from None
    return json_response({"triggers": triggers, "now": iso_from_ms(request.app[CLOCK].now_ms())})


async def _switch(request: web.Request, paused: bool) -> web.Response:
    require_admin(request)
    body, _ = await json_body(request, required=False)
    body = require_object(body)
    name = _name(request)
    reason = opt_str(body, "reason", max_chars=REASON_CHARS, default="")
    try:
        done = await request.app[TRIGGERS].set_paused(name, paused, reason=reason)
    except UnknownTrigger as exc:
        raise ApiError(404, ErrorCode.NOT_FOUND, str(exc), {}) from None
    except TriggerLag as exc:
        raise _lag(exc) from None
    return json_response(done)


async def pause(request: web.Request) -> web.Response:
    """The kill-switch: the trigger does not fire until resumed."""
    return await _switch(request, True)


async def resume(request: web.Request) -> web.Response:
    """A paused trigger fires again (its failure count starts over)."""
    return await _switch(request, False)


async def run_due(request: web.Request) -> web.Response:
    """Fire every due trigger now (what the periodic evaluation does)."""
    require_admin(request)
    body, _ = await json_body(request, required=False)
    require_object(body)
    try:
        fired = await request.app[TRIGGERS].run_due()
    except (TriggerLag, ConsolidationLag) as exc:
        raise _lag(exc) from None
    return json_response({"fired": fired, "now": iso_from_ms(request.app[CLOCK].now_ms())})


async def consolidate(request: web.Request) -> web.Response:
    """One deep-consolidation run now (trigger `manual`), whatever the trigger's condition."""
    require_admin(request)
    body, _ = await json_body(request, required=False)
    require_object(body)
    try:
        run = await request.app[CONSOLIDATION].run(trigger="manual")
    except ConsolidationLag as exc:
        raise _lag(exc) from None
    return json_response(run)


async def status(request: web.Request) -> web.Response:
    """The latest runs and their reports, the steps' states, the calibrated decay rates, the notices."""
    require_admin(request)
    limit = query_int(request, "limit", default=5, minimum=1, maximum=MAX_RUNS)
    reader = request.app[CONSOLIDATION_READER]
    await wait_for_projections(request, after_param(request, dict(request.query)), reader.reads)
    runs, steps, rates, notices = await asyncio.to_thread(
        lambda: (reader.runs(limit), reader.steps(), reader.rate_rows(), reader.notices(50)))
    for r in runs:
        r["at"] = iso_from_ms(r.pop("at_ms"))
    return json_response({"runs": runs, "steps": {s: steps.get(s, {"step": s, "failures": 0, "disabled": False})
                                                  for s in STEPS},
                          "decay_rates": rates, "notices": notices,
                          "position": await request.app[TRIGGERS].store.checkpoint("consolidation")})


async def enable_step(request: web.Request) -> web.Response:
    """Enable a consolidation step that three failures in a row disabled."""
    require_admin(request)
    body, _ = await json_body(request, required=False)
    require_object(body)
    try:
        done = await request.app[CONSOLIDATION].enable(request.match_info["step"])
    except UnknownStep as exc:
        raise ApiError(404, ErrorCode.NOT_FOUND, str(exc), {"known": list(STEPS)}) from None
    except ConsolidationLag as exc:
        raise _lag(exc) from None
    return json_response(done)


def routes() -> list[web.RouteDef]:
    return [web.get("/api/v1/triggers", listing),
            web.post("/api/v1/admin/triggers/run", run_due),
            web.post("/api/v1/admin/triggers/{name}/pause", pause),
            web.post("/api/v1/admin/triggers/{name}/resume", resume),
            web.get("/api/v1/consolidation", status),
            web.post("/api/v1/admin/consolidate", consolidate),
            web.post("/api/v1/admin/consolidation/steps/{step}/enable", enable_step)]
