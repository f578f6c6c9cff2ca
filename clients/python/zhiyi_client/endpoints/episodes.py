"""Raw episodes (conversations, task logs) that zhiyi distils into memories."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..calls import Call, fields, params, segment
from ..models import Episode, EpisodeCommit, Response
from ._build import get, keyed


def commit_episode(turns: Sequence[Mapping[str, Any]], *, kind: str = "conversation",
                   episode_id: str | None = None, namespace: str | None = None, status: str | None = None,
                   agent_id: str | None = None, idempotency_key: str | None = None) -> Call[EpisodeCommit]:
    """Post a raw episode (`POST /api/v1/episodes`): `turns` are `{role, content, at?}` dicts,
    `kind` conversation or task. Episodes are immutable: the same id with another body raises `Conflict`."""
    body = fields(episode_id=episode_id, namespace=namespace, kind=kind, status=status,
                  turns=[dict(t) for t in turns], agent_id=agent_id)
    return keyed("POST", "/api/v1/episodes", EpisodeCommit.from_json, body, idempotency_key)


def commit_episodes(episodes: Sequence[Mapping[str, Any]], *, agent_id: str | None = None,
                    idempotency_key: str | None = None) -> Call[Response]:
    """Post up to 100 episodes atomically (`POST /api/v1/episodes/batch`): `{results, position}`."""
    body = fields(episodes=[dict(e) for e in episodes], agent_id=agent_id)
    return keyed("POST", "/api/v1/episodes/batch", Response.from_json, body, idempotency_key)


def episode(episode_id: str, *, namespace: str | None = None, agent_id: str | None = None,
            after: str | None = None) -> Call[Episode]:
    """An episode with its turns and distillation (`GET /api/v1/episodes/{id}`)."""
    return get(f"/api/v1/episodes/{segment(episode_id)}", Episode.from_json,
               params(namespace=namespace, agent_id=agent_id), after=after)
