"""Results of the agent and system endpoints: registration and keys, health, statistics, episodes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._fields import flag, integer, mapping, obj, objects, opt_integer, opt_number, opt_text, text, texts
from .base import raw_field


@dataclass(frozen=True, kw_only=True)
class Registration:
    """`register_agent` and `rotate_key`: the agent's (new) key, shown once, and its namespaces."""

    agent_id: str
    api_key: str
    namespaces: tuple[str, ...]
    position: str
    ws_endpoint: str | None
    rate_limits: dict[str, Any] | None
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> Registration:
        d = obj(data)
        limits = d.get("rate_limits")
        return cls(agent_id=text(d, "agent_id"), api_key=text(d, "api_key"), namespaces=texts(d, "namespaces"),
                   position=text(d, "position"), ws_endpoint=opt_text(d, "ws_endpoint"),
                   rate_limits=dict(limits) if isinstance(limits, dict) else None, raw=d)


@dataclass(frozen=True, kw_only=True)
class Health:
    """`GET /health`. `ok` is True for `status: ok` (a replica whose link is down says `degraded`)."""

    status: str
    redis: bool
    role: str | None
    instance_id: str | None
    last_position: str | None
    lag_ms: int | None
    lag_events: int | None
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> Health:
        d = obj(data)
        return cls(status=text(d, "status"), redis=flag(d, "redis"), role=opt_text(d, "role"),
                   instance_id=opt_text(d, "instance_id"), last_position=opt_text(mapping(d, "log"), "last_position"),
                   lag_ms=opt_integer(d, "lag_ms"), lag_events=opt_integer(d, "lag_events"), raw=d)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True, kw_only=True)
class Stats:
    """`GET /api/v1/stats`: memories by namespace the key may read; `queues` for the admin key only."""

    memories_total: int
    by_namespace: dict[str, int]
    events_total: int
    last_position: str | None
    projectors: dict[str, Any]
    queues: dict[str, Any] | None
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> Stats:
        d = obj(data)
        memories, events = mapping(d, "memories"), mapping(d, "events")
        queues = d.get("queues")
        return cls(memories_total=integer(memories, "total"),
                   by_namespace={k: v for k, v in mapping(memories, "by_namespace").items() if isinstance(v, int)},
                   events_total=integer(events, "total"), last_position=opt_text(events, "last_position"),
                   projectors=mapping(d, "projectors"), queues=dict(queues) if isinstance(queues, dict) else None,
                   raw=d)


@dataclass(frozen=True, kw_only=True)
class EpisodeCommit:
    """`POST /api/v1/episodes` (and each entry of `/episodes/batch`)."""

    episode_id: str
    namespace: str
    position: str
    duplicate: bool
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> EpisodeCommit:
        d = obj(data)
        return cls(episode_id=text(d, "episode_id"), namespace=text(d, "namespace"), position=text(d, "position"),
                   duplicate=flag(d, "duplicate"), raw=d)


@dataclass(frozen=True, kw_only=True)
class Episode:
    """`GET /api/v1/episodes/{id}`: the turns and the distillation (`distill_status`, `distilled_to`)."""

    episode_id: str
    namespace: str
    agent_id: str | None
    kind: str
    status: str | None
    turns: tuple[dict[str, Any], ...]
    distill_status: str | None
    distilled_to: tuple[str, ...]
    extractor: str | None
    reason: str | None
    density: float | None
    position: str
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> Episode:
        d = obj(data)
        return cls(episode_id=text(d, "episode_id"), namespace=text(d, "namespace"), agent_id=opt_text(d, "agent_id"),
                   kind=text(d, "kind"), status=opt_text(d, "status"), turns=tuple(objects(d, "turns")),
                   distill_status=opt_text(d, "distill_status"), distilled_to=texts(d, "distilled_to"),
                   extractor=opt_text(d, "extractor"), reason=opt_text(d, "reason"),
                   density=opt_number(d, "density"), position=text(d, "position"), raw=d)
