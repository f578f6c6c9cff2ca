"""A LAN replica's writes (`gateway.http.route_kinds`): forwarded to its primary as they came — the
caller's key, `Idempotency-Key` and body — and the primary's answer returned unchanged, so a retried
write stays exactly-once. Only a replica's app has this middleware (seed 4.1).

- The primary cannot be reached (nothing was sent): 503 `primary_unreachable` with `Retry-After`;
  a feedback vote is instead checked here (key, agent, memory readable) and buffered durably in the
  replica's outbox: 202 `{memory_id, verdict, buffered: true}`; the replica's link sends it once the
  primary answers again, ordered by the HLC at which it was recorded (`replicas.link`).
- Sent but unanswered: 503 `outcome_unknown`, retry with the same `Idempotency-Key`.
Writes are forwarded before authentication: the primary decides (a key registered a moment ago may
not have reached the replica yet).
"""

from __future__ import annotations

import asyncio
import time

import structlog
from aiohttp import web

from commands.decide import decide_feedback
from commands.error_codes import ErrorCode
from commands.parsing import parse_feedback
from gateway.http.appkeys import REPLICA, STORE
from gateway.http.auth import PRINCIPAL, authenticate
from gateway.http.errors import ApiError
from gateway.http.requests import acting_agent, idempotency, json_body, json_response, read_body
from gateway.http.route_kinds import BUFFERED, is_write, route_of
from replicas.primary_client import PrimaryOutcomeUnknown, PrimaryUnreachable
from replicas.runtime import ReplicaRuntime

log = structlog.get_logger(__name__)

RETRY_AFTER_S = 5


@web.middleware
async def forward_middleware(request: web.Request, handler) -> web.StreamResponse:
    replica = request.app.get(REPLICA)
    if replica is None or not is_write(request):
        return await handler(request)
    body = await read_body(request)
    try:
        got = await replica.client.forward(request.method, request.path_qs, request.headers, body,
                                           request.remote or "")
    except PrimaryUnreachable as exc:
        route = route_of(request)
        verdict = BUFFERED.get(route) if route is not None else None
        if verdict is not None:
            return await buffer_feedback(request, verdict, replica)
        log.warning("replica.forward_unreachable", path=request.path, error=str(exc))
        raise ApiError(503, ErrorCode.PRIMARY_UNREACHABLE,
                       "the primary cannot be reached from this replica: nothing was sent; retry later "
                       "(reads are still served here)", {"primary": replica.client.base_url},
                       headers={"Retry-After": str(RETRY_AFTER_S)}) from None
    except PrimaryOutcomeUnknown as exc:
        log.error("replica.forward_outcome_unknown", path=request.path, error=str(exc))
        raise ApiError(503, ErrorCode.OUTCOME_UNKNOWN,
                       "the primary did not answer this forwarded write: it may or may not be in the log",
                       {"retry": "with the same Idempotency-Key"}) from None
    return web.Response(status=got.status, body=got.body, headers=got.headers)


async def buffer_feedback(request: web.Request, verdict: str, replica: ReplicaRuntime) -> web.Response:
    """The vote checked as the primary would (key, agent, memory readable), then kept in the outbox."""
    request[PRINCIPAL] = await authenticate(request)
    body, raw = await json_body(request)
    cmd = parse_feedback(body, verdict)
    actor = await acting_agent(request, body)
    decide_feedback(actor, cmd, await request.app[STORE].memory_index(cmd.memory_id))   # NotFound: 404
    idem = idempotency(request, raw, f"feedback:{verdict}")
    op = {"kind": "feedback", "agent_id": actor.agent_id, "memory_id": cmd.memory_id, "verdict": cmd.verdict,
          "reason": cmd.reason, "observed_at": replica.clock.now()}
    buffered = await asyncio.to_thread(replica.outbox.add, op, agent_id=actor.agent_id, now_ms=int(time.time() * 1000),
                                       idem_key=idem.key if idem else "", fingerprint=idem.fingerprint if idem else "")
    log.info("replica.feedback_buffered", memory_id=cmd.memory_id, agent=actor.agent_id, op_id=buffered.op_id,
             duplicate=buffered.duplicate)
    replica.link.wake()     # the link retries now, then backs off until the primary answers
    return json_response({"memory_id": cmd.memory_id, "verdict": cmd.verdict, "buffered": True}, status=202)
