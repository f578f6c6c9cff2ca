"""Admin operations: forgetting and the scheduler, triggers, consolidation, audit, backups,
tombstones, synonyms, LAN replicas."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..calls import Call, fields, params, segment
from ..models import Response
from ._build import action, get, keyed


def forget(*, capacity: int | None = None, namespace: str | None = None,
           dry_run: bool | None = None) -> Call[Response]:
    """A forget run now (`POST /api/v1/admin/forget`): `{forgotten, count, capacity, dry_run, position}`."""
    return action("/api/v1/admin/forget", Response.from_json,
                  fields(capacity=capacity, namespace=namespace, dry_run=dry_run))


def tick(*, capacity: int | None = None, dry_run: bool | None = None) -> Call[Response]:
    """Run the scheduler's time-driven rules now (`POST /api/v1/admin/tick`)."""
    return action("/api/v1/admin/tick", Response.from_json, fields(capacity=capacity, dry_run=dry_run))


def triggers() -> Call[Response]:
    """The triggers by urgency, with their state (`GET /api/v1/triggers`)."""
    return get("/api/v1/triggers", Response.from_json, waits=False)


def run_triggers() -> Call[Response]:
    """Fire every due trigger now (`POST /api/v1/admin/triggers/run`)."""
    return action("/api/v1/admin/triggers/run", Response.from_json)


def pause_trigger(name: str, *, reason: str | None = None) -> Call[Response]:
    """The kill-switch of one trigger (`POST /api/v1/admin/triggers/{name}/pause`)."""
    return action(f"/api/v1/admin/triggers/{segment(name)}/pause", Response.from_json, fields(reason=reason))


def resume_trigger(name: str) -> Call[Response]:
    """Undo `pause_trigger` (`POST /api/v1/admin/triggers/{name}/resume`)."""
    return action(f"/api/v1/admin/triggers/{segment(name)}/resume", Response.from_json)


def consolidate() -> Call[Response]:
    """One deep-consolidation run now (`POST /api/v1/admin/consolidate`)."""
    return action("/api/v1/admin/consolidate", Response.from_json)


def consolidation(*, limit: int | None = None, after: str | None = None) -> Call[Response]:
    """Consolidation runs (newest first), steps, calibrated decay rates, notices."""
    return get("/api/v1/consolidation", Response.from_json, params(limit=limit), after=after)


def enable_consolidation_step(step: str) -> Call[Response]:
    """Re-enable a consolidation step that three failures disabled."""
    return action(f"/api/v1/admin/consolidation/steps/{segment(step)}/enable", Response.from_json)


def audit(*, type: str | Sequence[str] | None = None, namespace: str | None = None,  # noqa: A002 (the API's name)
          agent_id: str | None = None, since: str | None = None, until: str | None = None,
          cursor: str | None = None, limit: int | None = None) -> Call[Response]:
    """Who did what, read from the log (`GET /api/v1/admin/audit`); `next` is the following page's cursor."""
    query = params(type=type, namespace=namespace, agent_id=agent_id, since=since, until=until, cursor=cursor,
                   limit=limit)
    return get("/api/v1/admin/audit", Response.from_json, query, waits=False)


def backup(*, incremental: bool | None = None) -> Call[Response]:
    """Start a backup in the background (`POST /api/v1/admin/backup`, 202)."""
    return action("/api/v1/admin/backup", Response.from_json, fields(incremental=incremental))


def backups() -> Call[Response]:
    """The backup directory's archives and the state of the last backup."""
    return get("/api/v1/admin/backups", Response.from_json, waits=False)


def tombstones(*, namespace: str | None = None, memory_id: str | None = None, reason: str | None = None,
               limit: int | None = None, offset: int | None = None, after: str | None = None) -> Call[Response]:
    """Forgotten and merged memories with their content at eviction (`GET /api/v1/admin/tombstones`)."""
    query = params(namespace=namespace, memory_id=memory_id, reason=reason, limit=limit, offset=offset)
    return get("/api/v1/admin/tombstones", Response.from_json, query, after=after)


def add_synonyms(term: str, synonyms: Sequence[str], *, namespace: str | None = None,
                 idempotency_key: str | None = None) -> Call[Response]:
    """Make `term` and `synonyms` mutually synonymous for lexical search (`POST /api/v1/admin/synonyms`)."""
    body = fields(term=term, synonyms=list(synonyms), namespace=namespace)
    return keyed("POST", "/api/v1/admin/synonyms", Response.from_json, body, idempotency_key)


def synonyms(*, namespace: str | None = None, limit: int | None = None,
             after: str | None = None) -> Call[Response]:
    """The synonym groups (`GET /api/v1/admin/synonyms`)."""
    return get("/api/v1/admin/synonyms", Response.from_json, params(namespace=namespace, limit=limit), after=after)


def create_replica(*, instance_id: str | None = None) -> Call[Response]:
    """A key for a LAN replica (`POST /api/v1/admin/replicas`, 201 `{instance_id, replica_key}`)."""
    return action("/api/v1/admin/replicas", Response.from_json, fields(instance_id=instance_id))


def replica_ops(instance_id: str, ops: Sequence[Mapping[str, Any]], *,
                status: Mapping[str, Any] | None = None) -> Call[Response]:
    """What a LAN replica learnt locally, sent with its replica key (`POST /api/v1/replicas/{id}/ops`)."""
    body = fields(ops=[dict(o) for o in ops], status=dict(status) if status is not None else None)
    return action(f"/api/v1/replicas/{segment(instance_id)}/ops", Response.from_json, body)
