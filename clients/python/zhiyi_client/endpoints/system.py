"""Agents and keys, health, statistics, instances, metrics, the OpenAPI document."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..calls import Call, fields, params, segment
from ..models import Health, Registration, Response, Stats
from ..models._fields import obj
from ..retry import Kind
from ._build import action, get, keyed


def register_agent(agent_id: str, *, agent_type: str | None = None, namespace: str | None = None,
                   idempotency_key: str | None = None) -> Call[Registration]:
    """Register an agent (admin key; `POST /api/v1/agents/register`): its `api_key` works at once.
    No idempotency key is generated: the server answers the same body within 24 h with the same key
    (a retry, or running the same set-up script again), where a new key each time would be a 409."""
    body = fields(agent_id=agent_id, agent_type=agent_type, namespace=namespace)
    call = keyed("POST", "/api/v1/agents/register", Registration.from_json, body, idempotency_key)
    return dataclasses.replace(call, generate_key=False)


def rotate_key(agent_id: str, *, idempotency_key: str | None = None) -> Call[Registration]:
    """A new key for the agent (admin key or the agent's own); the old one stops working."""
    return keyed("POST", f"/api/v1/agents/{segment(agent_id)}/rotate-key", Registration.from_json, {},
                 idempotency_key)


def revoke_key(agent_id: str) -> Call[Response]:
    """Revoke the agent's key (`{agent_id, revoked, position}`); nothing to revoke raises `Conflict`."""
    return action(f"/api/v1/agents/{segment(agent_id)}/revoke", Response.from_json)


def health() -> Call[Health]:
    """`GET /health` (no key needed)."""
    return get("/health", Health.from_json, waits=False)


def openapi() -> Call[dict[str, Any]]:
    """The server's OpenAPI document."""
    return get("/api/v1/openapi.json", obj, waits=False)


def stats(*, after: str | None = None) -> Call[Stats]:
    """Memory and event counts over the namespaces the key may read (`GET /api/v1/stats`)."""
    return get("/api/v1/stats", Stats.from_json, after=after)


def instances() -> Call[Response]:
    """Gateways, projector processes and replicas with their state (admin)."""
    return get("/api/v1/instances", Response.from_json, waits=False)


def metrics_self(*, days: int | None = None, after: str | None = None) -> Call[Response]:
    """The seven self-metrics of the day with their trends (admin; `GET /api/v1/metrics/self`)."""
    return get("/api/v1/metrics/self", Response.from_json, params(days=days), after=after)


def prometheus_metrics() -> Call[str]:
    """The Prometheus exposition text (admin; `GET /metrics`)."""
    return Call("GET", "/metrics", str, Kind.READ, text=True)
