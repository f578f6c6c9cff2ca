"""GET /api/v1/admin/audit (admin): who did what, read from the log itself (seed 4.3) — every event with
its agent, `by` (the admin acting for it, a reaction, the scheduler), origin (the instance or replica),
time and payload, filtered with the API's filter names, oldest first, one page at a time (`next` is
the `cursor` of the following page; null at the end)."""

from __future__ import annotations

from datetime import datetime

from aiohttp import web

from commands.error_codes import ErrorCode
from commands.parsing import AGENT_ID_RE, NAMESPACE_RE
from events import positions
from events.browse import EventFilter, list_events, parse_time
from events.codec import to_json_dict
from events.hlc import iso_from_ms
from gateway.http.appkeys import STORE
from gateway.http.auth import require_admin
from gateway.http.errors import ApiError
from gateway.http.requests import json_response, query_int

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
TYPE_CHARS = 100


def _invalid(field: str, message: str) -> ApiError:
    return ApiError(400, ErrorCode.INVALID_REQUEST, f"{field}: {message}", {"field": field})


def _many(request: web.Request, field: str, pattern=None) -> frozenset[str]:
    """A comma-separated list (or the parameter repeated)."""
    values = [v.strip() for raw in request.query.getall(field, []) for v in raw.split(",") if v.strip()]
    for v in values:
        if len(v) > TYPE_CHARS or (pattern is not None and not pattern.fullmatch(v)):
            raise _invalid(field, f"{v[:40]!r} has an invalid format")
    return frozenset(values)


def _filter(request: web.Request) -> EventFilter:
    since, until = (_time(request, field) for field in ("since", "until"))
    cursor = request.query.get("cursor")
    if cursor is not None and not positions.is_valid(cursor):
        raise _invalid("cursor", "must be a position (the `next` of the previous page)")
    return EventFilter(types=_many(request, "type"), namespaces=_many(request, "namespace", NAMESPACE_RE),
                       agents=_many(request, "agent_id", AGENT_ID_RE), start=cursor, since=since, until=until)


def _time(request: web.Request, field: str) -> datetime | None:
    if field not in request.query:
        return None
    try:
        return parse_time(request.query[field])
    except ValueError as exc:
        raise _invalid(field, str(exc)) from None


async def audit(request: web.Request) -> web.Response:
    require_admin(request)
    flt = _filter(request)
    limit = query_int(request, "limit", default=DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT)
    cursor = request.query.get("cursor")
    found = await list_events(request.app[STORE], flt, limit=limit + 2)
    if cursor is not None:               # a page starts after the previous page's last event
        found = [e for e in found if e.position != cursor]
    page, more = found[:limit], len(found) > limit
    events = [{**to_json_dict(e), "at": iso_from_ms(e.wall_ms) if e.hlc else None} for e in page]
    return json_response({"events": events, "next": page[-1].position if more and page else None})


def routes() -> list[web.RouteDef]:
    return [web.get("/api/v1/admin/audit", audit)]
