"""Episode request bodies -> validated commands (POST /api/v1/episodes and /episodes/batch).

An episode is `{episode_id?, namespace?, kind, status?, turns: [{role, content, at?}]}`, at most
`Limits.max_episode_bytes` of JSON as sent. Everything is checked before anything is appended;
errors name the field (`turns[3].role`, `episodes[2].kind`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

from commands.errors import InvalidCommand, TooLarge
from commands.model import CommitEpisode, CommitEpisodes, EpisodeTurn, Limits
from commands.parsing import (
    NAMESPACE_RE, _fail, opaque_id, opt_str, require_object, required_list, required_text,
)

EPISODE_KINDS = ("conversation", "task")
EPISODE_STATUSES = ("ok", "skipped", "error")
TURN_ROLES = ("user", "assistant", "tool", "system")
MAX_AT_CHARS = 64


def parse_episode(body: Any, limits: Limits, *, size: int | None = None) -> CommitEpisode:
    """One episode; `size` is its JSON size as sent (measured here when not given)."""
    body = require_object(body)
    size = len(orjson.dumps(body)) if size is None else size
    if size > limits.max_episode_bytes:
        raise TooLarge(f"episode: must be at most {limits.max_episode_bytes} bytes of JSON, got {size}",
                       {"field": "episode", "limit": limits.max_episode_bytes, "size": size})
    kind = opt_str(body, "kind", max_chars=16, choices=EPISODE_KINDS)
    if kind is None:
        raise _fail("kind", f"is required (one of {', '.join(EPISODE_KINDS)})", allowed=list(EPISODE_KINDS))
    episode_id = opaque_id(body, "episode_id", limits.max_derived_from_chars)
    return CommitEpisode(
        kind=kind,
        turns=_turns(body, limits),
        status=opt_str(body, "status", max_chars=16, default="ok", choices=EPISODE_STATUSES),
        episode_id=episode_id,
        namespace=opt_str(body, "namespace", max_chars=64, pattern=NAMESPACE_RE),
    )


def _turns(body: dict[str, Any], limits: Limits) -> tuple[EpisodeTurn, ...]:
    turns = required_list(body, "turns", max_items=limits.max_episode_turns, items="{role, content, at?} objects")
    return tuple(_turn(t, i) for i, t in enumerate(turns))


def _turn(raw: Any, i: int) -> EpisodeTurn:
    field = f"turns[{i}]"
    if not isinstance(raw, dict):
        raise _fail(field, "must be an object {role, content, at?}")
    try:
        role = opt_str(raw, "role", max_chars=16, choices=TURN_ROLES)
        if role is None:
            raise _fail("role", f"is required (one of {', '.join(TURN_ROLES)})", allowed=list(TURN_ROLES))
        content = required_text(raw, "content")
        if "\x00" in content:
            raise _fail("content", "must not contain NUL characters")
        at = opt_str(raw, "at", max_chars=MAX_AT_CHARS, default="")
        if at and not _is_iso(at):
            raise _fail("at", "must be an ISO 8601 date-time (e.g. 2026-12-04T09:30:00Z)")
    except InvalidCommand as exc:
        raise InvalidCommand(f"{field}.{exc.message}", {**exc.details, "field": f"{field}.{exc.details.get('field')}"}) \
            from None
    return EpisodeTurn(role, content, at)


def _is_iso(value: str) -> bool:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return "T" in value or " " in value or len(value) == 10


def parse_episode_batch(body: Any, limits: Limits) -> CommitEpisodes:
    body = require_object(body)
    entries = required_list(body, "episodes", max_items=limits.max_episode_batch, items="episode objects")
    parsed = []
    for i, entry in enumerate(entries):
        try:
            parsed.append(parse_episode(entry, limits))
        except (InvalidCommand, TooLarge) as exc:
            raise type(exc)(f"episodes[{i}].{exc.message}", {**exc.details, "index": i}) from None
    return CommitEpisodes(tuple(parsed))
