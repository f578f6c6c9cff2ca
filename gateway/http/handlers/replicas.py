"""The primary's replica endpoints (seed 4.1): `POST /api/v1/admin/replicas` issues a replica key
(admin), `POST /api/v1/replicas/{instance_id}/ops` takes what a replica learnt locally — recall audits
and buffered feedback votes — and its heartbeat (`commands.replica_ops`). The ops endpoint takes that
replica's key only (`gateway.http.auth`), never an agent's or the admin's."""

from __future__ import annotations

import time
import uuid
from typing import Any

from aiohttp import web

from commands.error_codes import ErrorCode
from commands.replica_ops import INSTANCE_ID_RE, parse_ops
from events.redis.instances import Instances
from gateway.http.appkeys import REPLICA_OPS, STORE
from gateway.http.auth import require_admin
from gateway.http.errors import ApiError
from gateway.http.requests import json_body, json_response

ROLE = "replica"
STATUS_FIELDS = {"position": str, "lag_events": int, "lag_ms": int, "url": str, "version": str, "link": str}


def _instance_id(value: Any, field: str) -> str:
    if not isinstance(value, str) or not INSTANCE_ID_RE.fullmatch(value):
        raise ApiError(400, ErrorCode.INVALID_REQUEST,
                       f"{field}: must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit",
                       {"field": field})
    return value


async def register(request: web.Request) -> web.Response:
    """A new key for a replica (admin). Without `instance_id` one is made up; start the replica with
    ZHIYI_INSTANCE_ID set to it and ZHIYI_REPLICA_KEY to the key (shown once)."""
    require_admin(request)
    body, _ = await json_body(request, required=False)
    instance_id = _instance_id(body["instance_id"], "instance_id") if "instance_id" in body else str(uuid.uuid4())
    key = await request.app[REPLICA_OPS].register(instance_id)
    return json_response({"instance_id": instance_id, "replica_key": key}, status=201)


def _status(raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ApiError(400, ErrorCode.INVALID_REQUEST, "status: must be an object", {"field": "status"})
    out: dict[str, Any] = {}
    for name, value in raw.items():
        kind = STATUS_FIELDS.get(name)
        if kind is None:
            raise ApiError(400, ErrorCode.UNKNOWN_FIELD, f"status.{name}: unknown field", {"field": f"status.{name}"})
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool) or
                                  (isinstance(value, str) and len(value) > 300)):
            raise ApiError(400, ErrorCode.INVALID_REQUEST, f"status.{name}: must be a {kind.__name__} or null",
                           {"field": f"status.{name}"})
        out[name] = value
    return out


async def ops(request: web.Request) -> web.Response:
    """Apply a replica's operations (each exactly once) and record its heartbeat (`status`)."""
    instance_id = request.match_info["instance_id"]
    body, _ = await json_body(request)
    status = _status(body.get("status"))
    parsed = parse_ops(body)
    results = await request.app[REPLICA_OPS].apply(instance_id, parsed)
    store = request.app[STORE]
    if status is not None:
        await Instances(store.redis).beat(instance_id, ROLE, status, now_ms=int(time.time() * 1000),
                                          info=ROLE, epoch=store.epoch or "")
    return json_response({"results": [r.as_dict() for r in results],
                          "log": {"last_position": await store.last_position(), "epoch": store.epoch}})


def routes() -> list[web.RouteDef]:
    return [web.post("/api/v1/admin/replicas", register),
            web.post("/api/v1/replicas/{instance_id}/ops", ops)]
