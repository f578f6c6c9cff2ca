"""The self-improvement endpoints: POST /api/v1/trace/vprop (seed 6.3), GET /api/v1/skills and
POST /api/v1/skills/{name}/trial (seed 6.5), GET /api/v1/gaps (seed 3.2.2), GET /api/v1/l3/worldmodel (seed 6.6)."""

from __future__ import annotations

import asyncio

from aiohttp import web

from commands.error_codes import ErrorCode
from commands.learning.service import skill_view
from commands.learning.skills import NAME_RE, STATUSES
from commands.learning.values import REWARD_MAX, REWARD_MIN
from commands.parsing import TRACE_ID_MAX, TRACE_ID_RE, opt_float, opt_str
from gateway.http.appkeys import AUDIT, LEARNING, LEARNING_COMMANDS, SETTINGS, STORE, WAITER
from gateway.http.errors import ApiError
from gateway.http.requests import (
    acting_agent, after_param, idempotency, json_body, json_response, query_int, wait_for_projections,
)
from events.hlc import iso_from_ms
from projections.learning.reader import GAP_STATUSES


def _required(body: dict, field: str, value: object) -> None:
    if value is None:
        raise ApiError(400, ErrorCode.INVALID_REQUEST, f"{field}: is required", {"field": field})


async def vprop(request: web.Request) -> web.Response:
    body, raw = await json_body(request)
    trace_id = opt_str(body, "trace_id", max_chars=TRACE_ID_MAX, pattern=TRACE_ID_RE)
    _required(body, "trace_id", trace_id)
    reward = opt_float(body, "reward", minimum=REWARD_MIN, maximum=REWARD_MAX)
    _required(body, "reward", reward)
    assert trace_id is not None and reward is not None
    actor = await acting_agent(request, body, required=False)
    # the trace's recalls are audited in batches: append what this gateway holds, then let the activity
    # projection (which records traced recalls) reach the log's end
    await request.app[AUDIT].flush()
    last = await request.app[STORE].last_position()
    if last:
        await request.app[WAITER].wait(["activity"], last, request.app[SETTINGS].projection_wait_s)
    done = await request.app[LEARNING_COMMANDS].reward_trace(actor, trace_id, reward,
                                                             idempotency(request, raw, "vprop"))
    return json_response({"trace_id": done.trace_id, "reward": done.reward, "steps": done.steps,
                          "memories": [{"memory_id": v["memory_id"], "v_value": v["v"], "alpha": v["alpha"],
                                        "step": v["step"]} for v in done.values],
                          "position": done.position, "duplicate": done.duplicate})


async def skills(request: web.Request) -> web.Response:
    status = request.query.get("status")
    if status is not None and status not in STATUSES:
        raise ApiError(400, ErrorCode.INVALID_REQUEST, f"status: must be one of {', '.join(STATUSES)}",
                       {"field": "status", "allowed": list(STATUSES)})
    actor = await acting_agent(request, {}, required=False)
    reader = request.app[LEARNING]
    await wait_for_projections(request, after_param(request), reader.reads)
    rows = await asyncio.to_thread(reader.skills)
    shown = [skill_view(r) for r in rows if actor is None or actor.can_read(r["namespace"])]
    if status is not None:
        shown = [s for s in shown if s["status"] == status]
    return json_response({"skills": shown, "count": len(shown),
                          "position": await request.app[STORE].checkpoint("learning")})


async def trial(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if not NAME_RE.fullmatch(name):
        raise ApiError(400, ErrorCode.INVALID_REQUEST, f"name: has an invalid format (expected {NAME_RE.pattern})",
                       {"field": "name"})
    body, raw = await json_body(request)
    success = body.get("success")
    _required(body, "success", success)
    if not isinstance(success, bool):
        raise ApiError(400, ErrorCode.INVALID_REQUEST, "success: must be a boolean", {"field": "success"})
    actor = await acting_agent(request, body, required=False)
    done = await request.app[LEARNING_COMMANDS].record_trial(actor, name, success, idempotency(request, raw, "trial"))
    return json_response({**done.skill, "position": done.position, "duplicate": done.duplicate})


async def gaps(request: web.Request) -> web.Response:
    """An agent's knowledge gaps (the admin key: every agent's, or `agent_id`'s), newest first, with the
    closure rate over them."""
    status = request.query.get("status", "all")
    if status not in GAP_STATUSES:
        raise ApiError(400, ErrorCode.INVALID_REQUEST, f"status: must be one of {', '.join(GAP_STATUSES)}",
                       {"field": "status", "allowed": list(GAP_STATUSES)})
    limit = query_int(request, "limit", default=100, minimum=1, maximum=1000) or 100
    actor = await acting_agent(request, {}, required=False)
    agent = actor.agent_id if actor is not None else None
    reader = request.app[LEARNING]
    await wait_for_projections(request, after_param(request), reader.reads)
    rows = await asyncio.to_thread(reader.gaps, status, agent, limit)
    detected, closed = await asyncio.to_thread(reader.gap_counts, agent)
    shown = [{"gap_id": g["gap_id"], "agent_id": g["agent"], "query": g["query"], "queries": g["queries"],
              "gap_type": g["gap_type"], "status": g["status"], "suggestion": g["suggestion"],
              "evidence": g["evidence"], "detected_at": iso_from_ms(g["detected_ms"]), "position": g["position"],
              "repair": g["repair"] or None, "filled_count": g["filled_count"], "memory_ids": g["memory_ids"],
              "closed_position": g["closed_position"] or None, "detail": g["detail"]} for g in rows]
    return json_response({"gaps": shown, "count": len(shown), "detected": detected, "closed": closed,
                          "closure_rate": round(closed / detected, 4) if detected else None,
                          "position": await request.app[STORE].checkpoint("learning")})


async def worldmodel(request: web.Request) -> web.Response:
    """The L3 world model (seed 6.6): the latest `worldmodel.updated`, empty before the first."""
    await acting_agent(request, {}, required=False)          # an `agent_id` given is checked all the same
    reader = request.app[LEARNING]
    await wait_for_projections(request, after_param(request), reader.reads)
    model = await asyncio.to_thread(reader.worldmodel) or {}
    return json_response({"entities": model.get("entities", []), "interactions": model.get("interactions", []),
                          "constraints": model.get("constraints", []), "reason": model.get("reason"),
                          "updated_at": iso_from_ms(model["at_ms"]) if model else None,
                          "updated_position": model.get("position"),
                          "position": await request.app[STORE].checkpoint("learning")})


def routes() -> list[web.RouteDef]:
    return [web.post("/api/v1/trace/vprop", vprop), web.get("/api/v1/skills", skills),
            web.post("/api/v1/skills/{name}/trial", trial), web.get("/api/v1/gaps", gaps),
            web.get("/api/v1/l3/worldmodel", worldmodel)]
