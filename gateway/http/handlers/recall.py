"""Recall: POST /api/v1/recall, GET /api/v1/recall?query=..., GET /api/v1/bootstrap."""

from __future__ import annotations

import time

from aiohttp import web

from commands.access import Actor, resolve_scope
from commands.error_codes import ErrorCode
from commands.model import Limits
from commands.parsing import NAMESPACE_RE, TRACE_ID_MAX, TRACE_ID_RE, is_text, opt_float, opt_int, opt_str, str_list
from events.vocabulary import SHARED_NAMESPACE
from events.catalogue import RecallServed, new_event
from gateway.http.appkeys import AUDIT, QUERIES, READER, SETTINGS, STORE
from gateway.http.errors import ApiError
from gateway.http.requests import (
    acting_agent, after_param, json_body, json_response, namespaces_param, query_bool, query_int, query_number,
    wait_for_projections,
)
from projections.queries.recall.service import DEFAULT_CONTEXT, RecallHit, RecallRequest
from projections.memories.scores import DEFAULT_RANK_WEIGHT

BOOTSTRAP_DEFAULT, BOOTSTRAP_MAX = 10, 50


def _query_params(request: web.Request, limits: Limits) -> dict:
    q = request.query
    params: dict = {k: q[k] for k in ("query", "namespace", "agent_id", "trace_id") if k in q}
    if "cache" in q:
        params["cache"] = query_bool(request, "cache")
    if "top_k" in q:
        params["top_k"] = query_int(request, "top_k", default=None, minimum=1, maximum=limits.max_top_k)
    for name in ("min_score", "diversity", "context", "importance_weight"):
        if name in q:
            params[name] = query_number(request, name)
    if "include_namespaces" in q:
        params["include_namespaces"] = namespaces_param(request)
    return params


def parse_recall(body: dict, limits: Limits) -> tuple[str, int, str | None, tuple[str, ...], float | None, float, bool,
                                                    float, float]:
    query = opt_str(body, "query", max_chars=limits.max_query_chars)
    if query is None:
        raise ApiError(400, ErrorCode.INVALID_REQUEST, "query: is required", {"field": "query"})
    if not is_text(query):
        raise ApiError(400, ErrorCode.INVALID_REQUEST, "query: must not be empty", {"field": "query"})
    top_k = opt_int(body, "top_k", minimum=1, maximum=limits.max_top_k, default=10)
    namespace = opt_str(body, "namespace", max_chars=64, pattern=NAMESPACE_RE)
    include = str_list(body, "include_namespaces", max_items=limits.max_include_namespaces, max_chars=64,
                       pattern=NAMESPACE_RE)
    min_score = opt_float(body, "min_score", minimum=-1.0, maximum=1.0)
    diversity = opt_float(body, "diversity", minimum=0.0, maximum=1.0)
    context = opt_float(body, "context", minimum=0.0, maximum=1.0)
    weight = opt_float(body, "importance_weight", minimum=0.0, maximum=1.0)
    cache = body.get("cache", True)
    if not isinstance(cache, bool):
        raise ApiError(400, ErrorCode.INVALID_REQUEST, "cache: must be a boolean", {"field": "cache"})
    return (query, top_k, namespace, include, min_score, 0.5 if diversity is None else diversity, cache,
            DEFAULT_CONTEXT if context is None else context, DEFAULT_RANK_WEIGHT if weight is None else weight)


async def recall(request: web.Request) -> web.Response:
    started = time.perf_counter()
    if request.method == "GET":
        body = _query_params(request, request.app[SETTINGS].limits)
    else:
        body, _ = await json_body(request)
    query, top_k, namespace, include, min_score, diversity, use_cache, context, weight = parse_recall(
        body, request.app[SETTINGS].limits)
    trace_id = opt_str(body, "trace_id", max_chars=TRACE_ID_MAX, pattern=TRACE_ID_RE) or ""
    after = after_param(request, body)
    actor = await acting_agent(request, body, required=False)
    scope = resolve_scope(actor, namespace, include)
    answers = request.app[QUERIES].recall
    await wait_for_projections(request, after, answers.reads)
    req = RecallRequest(query=query, namespaces=scope, top_k=top_k, min_score=min_score, diversity=diversity,
                        shared_fallback=namespace is not None and namespace != SHARED_NAMESPACE, context=context,
                        importance_weight=weight)
    answer = await answers.answer(req, _result, use_cache=use_cache)
    took_ms = round((time.perf_counter() - started) * 1000, 2)
    _audit(request, actor, query, scope, answer.results, top_k, answer.prefetch, trace_id, min_score)
    return json_response({"results": answer.results, "namespaces": scope, "position": answer.position,
                          "took_ms": took_ms, "cached": answer.cached, "prefetch": answer.prefetch})


def _result(h: RecallHit) -> dict:
    out = {"memory_id": h.memory_id, "content": h.content, "score": round(float(h.score), 6),
           "similarity": round(float(h.similarity), 6), "namespace": h.namespace, "category": h.category,
           "tags": list(h.tags), "source": h.source, "version": h.version, "timestamp": h.timestamp,
           "freshness": h.freshness, "importance": round(float(h.importance), 6),
           "quality_score": round(float(h.quality_score), 6), "confidence": round(float(h.confidence), 6)}
    if h.fallback:
        out["fallback"] = "shared"
    if h.expansion:
        out["expansion"], out["via"] = h.expansion, h.via
    if h.warnings:
        out["warnings"] = list(h.warnings)
    return out


async def bootstrap(request: web.Request) -> web.Response:
    """About ten core facts for a cold-starting agent: tier=core first, then by importance, newest first."""
    q = request.query
    limit = query_int(request, "limit", default=BOOTSTRAP_DEFAULT, minimum=1, maximum=BOOTSTRAP_MAX)
    body = {k: q[k] for k in ("agent_id",) if k in q}
    actor = await acting_agent(request, body, required=False)
    scope = resolve_scope(actor, None, ())
    reader = request.app[READER]
    await wait_for_projections(request, after_param(request, body), reader.reads)
    rows = await reader.abootstrap(scope, limit)
    results = [{"memory_id": r["id"], "content": r["content"], "namespace": r["namespace"], "category": r["category"],
                "tier": r["tier"], "importance": round(float(r["importance"]), 6), "tags": list(r.get("tags") or []),
                "source": r.get("source", ""), "version": int(r.get("version", 1)), "timestamp": r.get("timestamp", ""),
                "freshness": r.get("freshness", "fresh")} for r in rows]
    return json_response({"results": results, "namespaces": scope,
                          "position": await request.app[STORE].checkpoint("memories")})


def _audit(request: web.Request, actor: Actor | None, query: str, scope: list[str], results: list[dict],
           top_k: int, prefetch: list[dict], trace_id: str, min_score: float | None) -> None:
    """Append recall.served without delaying the response (its prefetch list is pushed from it)."""
    payload = RecallServed(query=query, namespaces=tuple(scope), result_ids=tuple(r["memory_id"] for r in results),
                           scores=tuple(float(r["score"]) for r in results), top_k=top_k,
                           prefetch_ids=tuple(p["memory_id"] for p in prefetch),
                           prefetch_weights=tuple(float(p["weight"]) for p in prefetch), trace_id=trace_id,
                           min_score=min_score)
    event = new_event(payload, ns=actor.main_namespace if actor else SHARED_NAMESPACE,
                      agent=actor.agent_id if actor else "admin", by=actor.by if actor else "admin")
    request.app[AUDIT].add(event)


def routes() -> list[web.RouteDef]:
    return [web.post("/api/v1/recall", recall), web.get("/api/v1/recall", recall),
            web.get("/api/v1/bootstrap", bootstrap)]
