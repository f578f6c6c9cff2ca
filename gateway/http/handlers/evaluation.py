"""Evaluation (seed 6.1): POST /api/v1/eval/run, POST /api/v1/eval/generate, GET /api/v1/eval/history."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from commands.access import scope_resolver
from commands.evaluation import EvalRun, parse_generate, parse_run
from gateway.http.appkeys import COMMANDS, EVAL, SETTINGS, STORE
from gateway.http.auth import principal, require_admin
from gateway.http.requests import after_param, json_body, json_response, query_int, wait_for_projections
from projections.queries.evaluation.eval_log import history as eval_history

MAX_HISTORY = 1000
DEFAULT_HISTORY = 20


def report_json(run: EvalRun) -> dict[str, Any]:
    return {**run.report.metrics, "query_details": run.report.details(), "queries": run.queries,
            "top_k": run.report.top_k, "golden_set_id": run.golden_set_id, "position": run.position}


async def run(request: web.Request) -> web.Response:
    body, _ = await json_body(request, required=False)
    cmd = parse_run(body, request.app[SETTINGS].limits)
    who = principal(request)
    await wait_for_projections(request, after_param(request, body), request.app[EVAL].reads)
    scope_of = scope_resolver(request.app[COMMANDS], cmd.namespace, agent_key=None if who.is_admin else who.agent_id)
    done = await request.app[EVAL].run(cmd, scope_of, agent=who.agent_id or "admin",
                                       only_agent=None if who.is_admin else who.agent_id)
    return json_response(report_json(done))


async def generate(request: web.Request) -> web.Response:
    require_admin(request)
    body, _ = await json_body(request, required=False)
    cmd = parse_generate(body)
    await wait_for_projections(request, after_param(request, body), request.app[EVAL].reads)
    golden = await request.app[EVAL].generate(cmd)
    return json_response(golden.to_json(), status=201)


async def history(request: web.Request) -> web.Response:
    limit = query_int(request, "limit", default=DEFAULT_HISTORY, minimum=1, maximum=MAX_HISTORY) or DEFAULT_HISTORY
    who = principal(request)
    return json_response(await eval_history(request.app[STORE], limit,
                                            agent=None if who.is_admin else who.agent_id))


def routes() -> list[web.RouteDef]:
    return [web.post("/api/v1/eval/run", run), web.post("/api/v1/eval/generate", generate),
            web.get("/api/v1/eval/history", history)]
