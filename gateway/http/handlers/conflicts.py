"""Conflicts and merges (seed 3.3.2, 6.2): GET /api/v1/conflicts, POST /api/v1/conflicts/resolve,
POST /api/v1/admin/unmerge."""

from __future__ import annotations

from aiohttp import web

from commands.access import resolve_scope
from commands.conflicts.resolution import STRATEGIES
from commands.error_codes import ErrorCode
from commands.parsing import MEMORY_ID_RE, NAMESPACE_RE, opt_str, require_object, required_text
from gateway.http.appkeys import CONFLICT_COMMANDS, CONFLICTS, READER, STORE
from gateway.http.auth import require_admin
from gateway.http.errors import ApiError
from gateway.http.requests import acting_agent, after_param, json_body, json_response, query_int, wait_for_projections
from projections.conflicts.reader import MAX_LIMIT, STATUSES

DEFAULT_LIMIT = 100
MAX_OFFSET = 10_000_000
CONFLICT_ID_CHARS = 64
MEMORY_COLUMNS = ["id", "content", "namespace", "source", "agent_id", "tier", "timestamp", "status", "is_deleted"]


async def listing(request: web.Request) -> web.Response:
    """The conflicts whose two memories lie in the caller's scope (own namespaces and `shared`, or the
    one readable `namespace` named); the admin key without `agent_id` sees every conflict."""
    query = dict(request.query)
    status = query.get("status", "open")
    if status not in STATUSES:
        raise ApiError(400, ErrorCode.INVALID_REQUEST, f"status: must be one of {', '.join(STATUSES)}",
                       {"field": "status", "allowed": list(STATUSES)})
    namespace = query.get("namespace")
    if namespace is not None and not NAMESPACE_RE.fullmatch(namespace):
        raise ApiError(400, ErrorCode.INVALID_REQUEST, "namespace: has an invalid format", {"field": "namespace"})
    actor = await acting_agent(request, query, required=False)
    if actor is None:
        require_admin(request)
        scope = [namespace] if namespace else None
    else:
        scope = resolve_scope(actor, namespace, [])
    reader = request.app[CONFLICTS]
    await wait_for_projections(request, after_param(request, query), reader.reads)
    rows, total = await reader.page(scope, status,
                                    query_int(request, "limit", default=DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT),
                                    query_int(request, "offset", default=0, minimum=0, maximum=MAX_OFFSET))
    # what each memory says, so a person can choose (`ask_user`) without another request
    memories = await request.app[READER].arows(list({m for r in rows for m in r["memory_ids"]}),
                                               columns=MEMORY_COLUMNS)
    for r in rows:
        r["memories"] = [{"memory_id": m, **{c: memories[m][c] for c in MEMORY_COLUMNS if c != "id"}}
                         if m in memories else {"memory_id": m, "missing": True} for m in r["memory_ids"]]
    return json_response({"conflicts": rows, "count": total,
                          "position": await request.app[STORE].checkpoint("conflicts")})


async def resolve(request: web.Request) -> web.Response:
    body, _ = await json_body(request)
    body = require_object(body)
    conflict_id = required_text(body, "conflict_id")
    if len(conflict_id) > CONFLICT_ID_CHARS:
        raise ApiError(400, ErrorCode.INVALID_REQUEST, "conflict_id: is too long", {"field": "conflict_id"})
    strategy = required_text(body, "strategy")
    if strategy not in STRATEGIES:
        raise ApiError(400, ErrorCode.INVALID_REQUEST, f"strategy: must be one of {', '.join(STRATEGIES)}",
                       {"field": "strategy", "allowed": list(STRATEGIES)})
    winner = opt_str(body, "winner", max_chars=64) or ""
    actor = await acting_agent(request, body)
    await wait_for_projections(request, after_param(request, body), request.app[CONFLICTS].reads)
    done = await request.app[CONFLICT_COMMANDS].resolve(actor, conflict_id, strategy, winner)
    return json_response({"conflict_id": done.conflict_id, "strategy": done.strategy, "winner": done.winner,
                          "loser": done.loser, "position": done.position})


async def unmerge(request: web.Request) -> web.Response:
    require_admin(request)
    body, _ = await json_body(request)
    body = require_object(body)
    memory_id = required_text(body, "memory_id")
    if not MEMORY_ID_RE.fullmatch(memory_id):
        raise ApiError(400, ErrorCode.INVALID_REQUEST, "memory_id: has an invalid format", {"field": "memory_id"})
    done = await request.app[CONFLICT_COMMANDS].unmerge(memory_id)
    return json_response({"memory_id": done.memory_id, "merged_into": done.merged_into, "version": done.version,
                          "position": done.position})


def routes() -> list[web.RouteDef]:
    return [web.get("/api/v1/conflicts", listing), web.post("/api/v1/conflicts/resolve", resolve),
            web.post("/api/v1/admin/unmerge", unmerge)]
