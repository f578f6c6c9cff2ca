"""POST /api/v1/sessions/{session_id}/close: the agent's ephemeral memories committed under that session
(`session_id` on a commit into its `-ephemeral` namespace) are forgotten (`memory.forgotten`, reason
`session_closed`; listed by the tombstones). The agent's key, or the admin key with `agent_id`."""

from __future__ import annotations

from aiohttp import web

from commands.error_codes import ErrorCode
from commands.parsing import MAX_SESSION_ID_CHARS, CONTROL_CHARS_RE, is_text
from commands.scheduler import SchedulerLag
from gateway.http.appkeys import SCHEDULER
from gateway.http.errors import ApiError
from gateway.http.requests import acting_agent, json_body, json_response


async def close(request: web.Request) -> web.Response:
    session_id = request.match_info["session_id"]
    if len(session_id) > MAX_SESSION_ID_CHARS or not is_text(session_id) or CONTROL_CHARS_RE.search(session_id):
        raise ApiError(400, ErrorCode.INVALID_REQUEST,
                       f"session_id: 1-{MAX_SESSION_ID_CHARS} characters, not blank, no control characters",
                       {"field": "session_id"})
    body, _ = await json_body(request, required=False)
    actor = await acting_agent(request, body)
    try:
        forgotten, position = await request.app[SCHEDULER].close_session(actor.ephemeral_namespace, session_id,
                                                                         by=actor.by)
    except SchedulerLag as exc:
        raise ApiError(504, ErrorCode.PROJECTION_LAG, str(exc), {"after": exc.position}) from None
    return json_response({"session_id": session_id, "namespace": actor.ephemeral_namespace,
                          "forgotten": [c.memory_id for c in forgotten], "count": len(forgotten),
                          "position": position})


def routes() -> list[web.RouteDef]:
    return [web.post("/api/v1/sessions/{session_id}/close", close)]
