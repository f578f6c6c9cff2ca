"""Episodes (L0): POST /api/v1/episodes, POST /api/v1/episodes/batch, GET /api/v1/episodes/{episode_id}."""

from __future__ import annotations

from aiohttp import web

from commands.episode_parsing import parse_episode, parse_episode_batch
from commands.error_codes import ErrorCode
from commands.model import CommitEpisodes
from commands.parsing import NAMESPACE_RE, opaque_id
from gateway.http.appkeys import EPISODE_COMMANDS, EPISODES, SETTINGS
from gateway.http.errors import ApiError
from gateway.http.requests import acting_agent, after_param, idempotency, json_body, json_response, \
    wait_for_projections
from projections.episodes.reader import episode_view


def _outcome(o) -> dict:
    return {"episode_id": o.episode_id, "namespace": o.namespace, "position": o.position, "duplicate": o.duplicate}


async def commit(request: web.Request) -> web.Response:
    body, raw = await json_body(request)
    limits = request.app[SETTINGS].limits
    cmd = CommitEpisodes((parse_episode(body, limits, size=len(raw)),))
    actor = await acting_agent(request, body)
    outcomes, _ = await request.app[EPISODE_COMMANDS].commit(actor, cmd, idempotency(request, raw, "episodes"))
    done = outcomes[0]
    return json_response(_outcome(done), status=200 if done.duplicate else 201)


async def batch(request: web.Request) -> web.Response:
    body, raw = await json_body(request)
    cmd = parse_episode_batch(body, request.app[SETTINGS].limits)
    actor = await acting_agent(request, body)
    outcomes, position = await request.app[EPISODE_COMMANDS].commit(actor, cmd,
                                                                    idempotency(request, raw, "episodes/batch"))
    all_duplicates = all(o.duplicate for o in outcomes)
    return json_response({"results": [_outcome(o) for o in outcomes], "position": position},
                         status=200 if all_duplicates else 201)


async def get(request: web.Request) -> web.Response:
    episode_id = opaque_id({"episode_id": request.match_info["episode_id"]}, "episode_id",
                           request.app[SETTINGS].limits.max_derived_from_chars)
    namespace = request.query.get("namespace")
    if namespace is not None and not NAMESPACE_RE.fullmatch(namespace):
        raise ApiError(400, ErrorCode.INVALID_REQUEST, "namespace: has an invalid format", {"field": "namespace"})
    actor = await acting_agent(request, {})
    ns = namespace or actor.main_namespace
    not_found = ApiError(404, ErrorCode.NOT_FOUND, f"episode {episode_id} not found in namespace {ns}",
                         {"episode_id": episode_id, "namespace": ns})
    if not actor.can_read(ns):
        raise not_found   # another agent's ephemeral namespace: invisible
    episodes = request.app[EPISODES]
    await wait_for_projections(request, after_param(request), episodes.reads)
    row = await episodes.get(ns, episode_id)
    if row is None:
        raise not_found
    return json_response(episode_view(row))


def routes() -> list[web.RouteDef]:
    return [
        web.post("/api/v1/episodes", commit),
        web.post("/api/v1/episodes/batch", batch),
        web.get("/api/v1/episodes/{episode_id}", get),
    ]
