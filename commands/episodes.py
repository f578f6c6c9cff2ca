"""Committing raw episodes (L0): the pure decision and the handler that appends it.

An episode is immutable and its id is scoped to its namespace: the write-side index
`events.redis.keys.episode` holds the fingerprint of each committed episode's body. The same id
with the same body again is a duplicate (answered, nothing appended: a natural idempotency key);
with another body it is a 409 `episode_exists`. A batch is appended atomically, each new episode
guarded by its index being absent; a concurrent commit of the same id makes the guard fail and the
batch is decided again.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass

import orjson
import structlog

from commands.access import Actor
from commands.decide import writable_namespace
from commands.error_codes import ErrorCode
from commands.errors import Conflict, IdempotencyKeyReused, InvalidCommand
from commands.model import CommitEpisode, CommitEpisodes, IdempotencyRequest
from events.catalogue import EpisodeCommitted, new_event
from events.envelope import Event
from events.errors import GuardFailed
from events.redis.indexes import Guard
from events.redis.store import EventStore

log = structlog.get_logger(__name__)

RETRIES = 3


def episode_fingerprint(episode: CommitEpisode) -> str:
    """sha256 of the episode's canonical body (kind, status, turns): what "the same episode" means."""
    body = {"kind": episode.kind, "status": episode.status,
            "turns": [{"role": t.role, "content": t.content, "at": t.at} for t in episode.turns]}
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def episode_ids(actor: Actor, cmd: CommitEpisodes, idem: IdempotencyRequest | None) -> list[str]:
    """Each entry's id: the client's, else derived from the request's Idempotency-Key (so a retry
    finds its episodes again), else a new uuid."""
    out = []
    for i, entry in enumerate(cmd.entries):
        if entry.episode_id:
            out.append(entry.episode_id)
        elif idem is not None:
            digest = hashlib.sha256(f"{actor.agent_id}\n{idem.key}\n{i}".encode()).hexdigest()
            out.append(f"ep-{digest[:32]}")
        else:
            out.append(f"ep-{uuid.uuid4().hex}")
    return out


@dataclass(frozen=True, slots=True)
class EpisodeDecision:
    events: list[Event]
    guards: list[Guard]
    duplicates: set[int]           # entries already committed with the same body


def decide_episodes(actor: Actor, cmd: CommitEpisodes, ids: list[str],
                    existing: dict[tuple[str, str], str]) -> EpisodeDecision:
    """Events for the new episodes; entries already committed with the same body are duplicates,
    with another body a conflict (409, or 422 when the id came from a reused Idempotency-Key); the
    same (namespace, id) twice in one request is refused."""
    events: list[Event] = []
    guards: list[Guard] = []
    duplicates: set[int] = set()
    seen: dict[tuple[str, str], int] = {}
    for i, (entry, episode_id) in enumerate(zip(cmd.entries, ids)):
        ns = writable_namespace(actor, entry.namespace)
        key = (ns, episode_id)
        if key in seen:
            raise InvalidCommand(f"episodes[{i}].episode_id: {episode_id} appears twice in this request "
                                 f"(also episodes[{seen[key]}])", {"field": "episode_id", "index": i})
        seen[key] = i
        fingerprint = episode_fingerprint(entry)
        if key in existing:
            if existing[key] != fingerprint:
                if not entry.episode_id:   # derived from the Idempotency-Key: the key was reused
                    raise IdempotencyKeyReused("this Idempotency-Key was already used with a different request body",
                                               {"index": i})
                raise Conflict(f"episode {episode_id} already exists in namespace {ns} with another body "
                               "(episodes are immutable: use a new episode_id)",
                               {"episode_id": episode_id, "namespace": ns, "index": i},
                               code=ErrorCode.EPISODE_EXISTS)
            duplicates.add(i)
            continue
        turns = tuple({"role": t.role, "content": t.content, **({"at": t.at} if t.at else {})} for t in entry.turns)
        events.append(new_event(EpisodeCommitted(episode_id, ns, entry.kind, entry.status, turns, fingerprint),
                                ns=ns, agent=actor.agent_id, by=actor.by))
        guards.append(Guard.episode_absent(ns, episode_id))
    return EpisodeDecision(events, guards, duplicates)


@dataclass(frozen=True, slots=True)
class EpisodeOutcome:
    episode_id: str
    namespace: str
    position: str
    duplicate: bool


@dataclass
class EpisodeCommands:
    store: EventStore

    async def commit(self, actor: Actor, cmd: CommitEpisodes,
                     idem: IdempotencyRequest | None = None) -> tuple[list[EpisodeOutcome], str]:
        """Append the new episodes of `cmd` in one step; returns each entry's outcome and the position
        to read after (a duplicate's is at or after its original commit)."""
        ids = episode_ids(actor, cmd, idem)
        for attempt in range(RETRIES):
            namespaces = [writable_namespace(actor, e.namespace) for e in cmd.entries]
            existing = await self.store.episode_fingerprints(list(zip(namespaces, ids)))
            decision = decide_episodes(actor, cmd, ids, existing)
            if not decision.events:
                position = await self.store.last_position() or ""
                return [EpisodeOutcome(i, ns, position, True) for i, ns in zip(ids, namespaces)], position
            try:
                res = await self.store.append(decision.events, guards=decision.guards)
            except GuardFailed:  # the same id committed concurrently: decide again
                log.info("episodes.retry", attempt=attempt)
                continue
            new_positions = iter(res.positions)
            out = [EpisodeOutcome(i, ns, res.position if n in decision.duplicates else next(new_positions),
                                     n in decision.duplicates)
                   for n, (i, ns) in enumerate(zip(ids, namespaces))]
            log.info("episodes.committed", agent=actor.agent_id, new=len(decision.events),
                     duplicates=len(decision.duplicates), position=res.position)
            return out, res.position
        raise Conflict("episodes with these ids are being committed concurrently; retry", {},
                       code=ErrorCode.EPISODE_EXISTS)
