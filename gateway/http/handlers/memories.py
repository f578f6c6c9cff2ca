"""Writes: POST /api/v1/commit, POST /api/v1/batch-commit, DELETE /api/v1/distilled/{id}."""

from __future__ import annotations

from aiohttp import web

from commands.parsing import MAX_VERSION, parse_batch, parse_commit, parse_delete
from gateway.http.appkeys import COMMANDS, SETTINGS
from gateway.http.requests import acting_agent, idempotency, json_body, json_response, query_int


async def commit(request: web.Request) -> web.Response:
    body, raw = await json_body(request)
    cmd = parse_commit(body, request.app[SETTINGS].limits)
    actor = await acting_agent(request, body)
    idem = idempotency(request, raw, "commit")
    done = await request.app[COMMANDS].commit(actor, cmd, idem)
    return json_response({"memory_id": done.memory_id, "namespace": done.namespace, "version": done.version,
                          "position": done.position, "duplicate": done.duplicate, "conflicts": done.conflicts},
                         status=200 if done.duplicate else 201)


async def batch_commit(request: web.Request) -> web.Response:
    body, raw = await json_body(request)
    cmd = parse_batch(body, request.app[SETTINGS].limits)
    actor = await acting_agent(request, body)
    idem = idempotency(request, raw, "batch-commit")
    done = await request.app[COMMANDS].batch_commit(actor, cmd, idem)
    return json_response({"results": [{"memory_id": mid, "position": pos, "conflicts": found}
                                      for (mid, pos), found in zip(done.results, done.conflicts)],
                          "position": done.position, "duplicate": done.duplicate},
                         status=200 if done.duplicate else 201)


async def delete(request: web.Request) -> web.Response:
    body, raw = await json_body(request, required=False)
    params = dict(body)
    if "expected_version" not in params and "expected_version" in request.query:
        params["expected_version"] = query_int(request, "expected_version", default=None, minimum=1,
                                               maximum=MAX_VERSION)
    cmd = parse_delete(request.match_info["memory_id"], params)
    actor = await acting_agent(request, body)
    # the fingerprint covers the memory, the query (expected_version) and the body
    idem = idempotency(request, raw, f"delete:{cmd.memory_id}?{request.query_string}")
    done = await request.app[COMMANDS].delete(actor, cmd, idem)
    return json_response({"memory_id": done.memory_id, "version": done.version, "position": done.position})


def routes() -> list[web.RouteDef]:
    return [
        web.post("/api/v1/commit", commit),
        web.post("/api/v1/batch-commit", batch_commit),
        web.delete("/api/v1/distilled/{memory_id}", delete),
    ]
