"""Request helpers shared by the handlers: JSON bodies, the acting agent, read-your-writes."""

from __future__ import annotations

import hashlib
import re
import zlib
from typing import Any, Literal, Sequence, overload

import orjson
from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

from commands.access import Actor
from commands.model import IdempotencyRequest
from commands.error_codes import ErrorCode
from commands.parsing import AGENT_ID_RE, parse_idempotency_key
from events import positions
from gateway.http.appkeys import COMMANDS, SETTINGS, STORE, WAITER
from gateway.http.auth import principal
from gateway.http.errors import ApiError
from gateway.http.request_schema import check_body_fields

_POSITION = re.compile(r"[0-9]{1,20}-[0-9]{1,20}")
_INTEGER = re.compile(r"-?[0-9]{1,19}")            # ASCII only: int() would take '²' or '١'
_NUMBER = re.compile(r"-?[0-9]{1,20}(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?")


async def read_body(request: web.Request) -> bytes:
    """The raw body; one that cannot be decoded (`Content-Encoding: gzip` over non-gzip bytes, a
    broken chunked stream) is a 400 in the one error shape, not a 500."""
    try:
        return await request.read()
    except (RequestPayloadError, zlib.error, UnicodeDecodeError, ValueError):
        raise ApiError(400, ErrorCode.BAD_REQUEST,
                       "the request body could not be read (its Content-Encoding does not match it, or "
                       "the transfer broke off)",
                       {"content_encoding": request.headers.get("Content-Encoding", "")}, close=True) from None


async def json_body(request: web.Request, *, required: bool = True) -> tuple[Any, bytes]:
    """The JSON object body, its raw bytes; fields the OpenAPI document does not list answer 400
    `unknown_field`."""
    raw = await read_body(request)
    if not raw.strip():
        if required:
            raise ApiError(400, ErrorCode.INVALID_JSON, "request body must be a JSON object")
        return {}, raw
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ApiError(400, ErrorCode.INVALID_JSON, f"malformed JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ApiError(400, ErrorCode.INVALID_JSON, "request body must be a JSON object")
    check_body_fields(request, body)
    return body, raw


def _invalid(field: str, message: str, **extra: Any) -> ApiError:
    return ApiError(400, ErrorCode.INVALID_REQUEST, f"{field}: {message}", {"field": field, **extra})


@overload
def query_int(request: web.Request, field: str, *, default: int, minimum: int, maximum: int) -> int: ...
@overload
def query_int(request: web.Request, field: str, *, default: None, minimum: int, maximum: int) -> int | None: ...


def query_int(request: web.Request, field: str, *, default: int | None, minimum: int, maximum: int) -> int | None:
    """An integer query parameter: ASCII digits only, within [minimum, maximum]."""
    raw = request.query.get(field)
    if raw is None:
        return default
    if not _INTEGER.fullmatch(raw) or not minimum <= int(raw) <= maximum:
        raise _invalid(field, f"must be an integer in {minimum}..{maximum}", minimum=minimum, maximum=maximum)
    return int(raw)


def query_number(request: web.Request, field: str) -> float | None:
    """A decimal number query parameter (ASCII; no nan/inf); the range is the body parser's."""
    raw = request.query.get(field)
    if raw is None:
        return None
    if not _NUMBER.fullmatch(raw):
        raise _invalid(field, "must be a number")
    return float(raw)


def query_bool(request: web.Request, field: str) -> bool | None:
    raw = request.query.get(field)
    if raw is None:
        return None
    if raw not in ("true", "false"):
        raise _invalid(field, "must be true or false")
    return raw == "true"


def _agent_id_param(request: web.Request, body: dict) -> str | None:
    value = body["agent_id"] if "agent_id" in body else request.query.get("agent_id")
    if value is None and "agent_id" not in body:
        return None
    if not isinstance(value, str) or not AGENT_ID_RE.fullmatch(value):
        raise _invalid("agent_id", "must be a valid agent id")
    return value


@overload
async def acting_agent(request: web.Request, body: dict, *, required: Literal[True] = True) -> Actor: ...
@overload
async def acting_agent(request: web.Request, body: dict, *, required: bool) -> Actor | None: ...


async def acting_agent(request: web.Request, body: dict, *, required: bool = True) -> Actor | None:
    """The agent a request acts as. The admin key names it with `agent_id`; an agent key is itself."""
    who = principal(request)
    named = _agent_id_param(request, body)
    commands = request.app[COMMANDS]
    if who.is_admin:
        if named is None:
            if required:
                raise ApiError(400, ErrorCode.AGENT_ID_REQUIRED,
                               "the admin key must name the agent it acts for with agent_id", {"field": "agent_id"})
            return None
        return await commands.require_actor(named, by="admin")
    if named is not None and named != who.agent_id:
        raise ApiError(403, ErrorCode.FORBIDDEN, "only the admin key may act for another agent",
                       {"agent_id": named})
    assert who.agent_id is not None  # an agent's key always names its agent (gateway.http.auth)
    return await commands.require_actor(who.agent_id)


def idempotency(request: web.Request, raw_body: bytes, endpoint: str) -> IdempotencyRequest | None:
    key = parse_idempotency_key(request.headers.get("Idempotency-Key"))
    if key is None:
        return None
    try:
        canonical = orjson.dumps(orjson.loads(raw_body), option=orjson.OPT_SORT_KEYS)
    except orjson.JSONDecodeError:
        canonical = raw_body
    fingerprint = hashlib.sha256(endpoint.encode() + b"\n" + canonical).hexdigest()
    return IdempotencyRequest(key, fingerprint)


def after_param(request: web.Request, body: dict | None = None) -> str | None:
    if body and "after" in body and body["after"] is None:
        raise _invalid("after", "must not be null (leave the field out instead)")
    found = None
    for value in ((body or {}).get("after"), request.query.get("after"), request.headers.get("X-Zhiyi-After")):
        if value is None or value == "":
            continue
        if not isinstance(value, str) or not _POSITION.fullmatch(value):
            raise _invalid("after", "must be a position returned by a write (e.g. '1700000000000-0')")
        found = found or value
    return found


def namespaces_param(request: web.Request) -> list[str]:
    """`include_namespaces` in a query string: comma-separated, repeatable; '' names none."""
    return [ns for v in request.query.getall("include_namespaces") if v for ns in v.split(",")]


async def wait_for_projections(request: web.Request, after: str | None, reads: Sequence[str]) -> None:
    """Read-your-writes: wait until the projections this endpoint reads (its query's `reads`)
    reached `after`."""
    if not after:
        return
    names = list(reads)
    timeout = request.app[SETTINGS].projection_wait_s
    waiter = request.app[WAITER]
    if await waiter.wait(names, after, 0):
        return
    last = await request.app[STORE].last_position()
    # on a LAN replica a position beyond its log may still be on its way (replication): wait, then 504
    if not request.app[SETTINGS].is_replica and (last is None or positions.key(after) > positions.key(last)):
        raise ApiError(422, ErrorCode.UNPROCESSABLE,
                       f"after: {after} is beyond the end of the log ({last or 'empty'}): no write returned it",
                       {"field": "after", "last_position": last})
    if not await waiter.wait(names, after, timeout):
        raise ApiError(504, ErrorCode.PROJECTION_LAG,
                       f"projections did not reach position {after} within {timeout:g} s",
                       {"after": after, "projections": names})


def json_response(data: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(data) + b"\n", content_type="application/json")
