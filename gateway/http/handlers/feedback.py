"""Feedback and corrections (seed 2.7): POST /api/v1/feedback/{useful,not-useful,deprecate,correct},
and the provenance chain GET /api/v1/memory/{id}/versions (seed 3.3.3)."""

from __future__ import annotations

from aiohttp import web

from commands.error_codes import ErrorCode
from commands.parsing import MEMORY_ID_RE, parse_correct, parse_deprecate, parse_feedback
from gateway.http.appkeys import COMMANDS, QUERIES, SETTINGS
from gateway.http.errors import ApiError
from gateway.http.requests import acting_agent, after_param, idempotency, json_body, json_response, wait_for_projections


def _verdict(verdict: str):
    async def handler(request: web.Request) -> web.Response:
        body, raw = await json_body(request)
        cmd = parse_feedback(body, verdict)
        actor = await acting_agent(request, body)
        done = await request.app[COMMANDS].feedback(actor, cmd, idempotency(request, raw, f"feedback:{verdict}"))
        return json_response({"memory_id": done.memory_id, "verdict": done.verdict, "position": done.position},
                             status=201)
    return handler


async def deprecate(request: web.Request) -> web.Response:
    body, raw = await json_body(request)
    cmd = parse_deprecate(body)
    actor = await acting_agent(request, body)
    done = await request.app[COMMANDS].deprecate(actor, cmd, idempotency(request, raw, "deprecate"))
    return json_response({"memory_id": done.memory_id, "version": done.version, "position": done.position})


async def correct(request: web.Request) -> web.Response:
    body, raw = await json_body(request)
    cmd = parse_correct(body, request.app[SETTINGS].limits)
    actor = await acting_agent(request, body)
    done = await request.app[COMMANDS].correct(actor, cmd, idempotency(request, raw, "correct"))
    return json_response({"memory_id": done.memory_id, "version": done.version, "position": done.position})


async def versions(request: web.Request) -> web.Response:
    """Every version of a memory, oldest first: content, who, why, from where, what triggered it."""
    memory_id = request.match_info["memory_id"]
    if not MEMORY_ID_RE.fullmatch(memory_id):
        raise ApiError(400, ErrorCode.INVALID_REQUEST, "memory_id: has an invalid format", {"field": "memory_id"})
    body = dict(request.query)
    actor = await acting_agent(request, body, required=False)
    versions = request.app[QUERIES].versions
    await wait_for_projections(request, after_param(request, body), versions.reads)
    view = await versions.view(memory_id, actor.can_read if actor is not None else None)
    if view is None:
        raise ApiError(404, ErrorCode.NOT_FOUND, f"memory {memory_id} not found", {"memory_id": memory_id})
    row, derived = view.row, view.scores
    return json_response({
        "memory_id": memory_id, "namespace": row["namespace"], "version": row["version"], "content": row["content"],
        "status": row.get("status", "active"), "is_deleted": row["is_deleted"], "volatile": row["volatile_flag"],
        "tier": row.get("tier", "normal"), "decay_class": row.get("decay_class", ""), "source": row.get("source", ""),
        "category": row.get("category", ""), "kind": row.get("kind", "L1"), "extractor": row.get("extractor", ""),
        "derived_from": row.get("derived_from", ""),
        "useful_count": row["useful_count"], "not_useful_count": row["not_useful_count"],
        "recall_count": view.recall_count, "last_recalled_at": view.last_recalled_at,
        "quality_score": round(float(row["quality_score"]), 6), "quality_notice_at": row.get("quality_notice_at", ""),
        "importance_factor": round(float(row["importance"]), 6), "importance": round(derived.importance, 6),
        "decay": round(derived.decay, 6), "freshness": derived.freshness,
        "confidence": round(float(derived.confidence), 6), "updated_at": row.get("updated_at", ""),
        "versions": row["version_history"]})


def routes() -> list[web.RouteDef]:
    return [
        web.post("/api/v1/feedback/useful", _verdict("useful")),
        web.post("/api/v1/feedback/not-useful", _verdict("not_useful")),
        web.post("/api/v1/feedback/deprecate", deprecate),
        web.post("/api/v1/feedback/correct", correct),
        web.get("/api/v1/memory/{memory_id}/versions", versions),
    ]
