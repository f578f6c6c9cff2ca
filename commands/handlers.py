"""Command handlers: read the write-side indexes, decide, append. The only I/O of the write side."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, TypeVar

import orjson
import structlog

from commands.access import Actor
from commands.conflicts.detector import ConflictDetector, detected_events, reported
from commands.decide import (
    Decision, decide_add_synonyms, decide_commit, decide_correct, decide_delete, decide_deprecate, decide_feedback,
    decide_forget, decide_register,
)
from commands.error_codes import ErrorCode
from commands.errors import Conflict, NotFound
from commands.idempotency import ADMIN_SCOPE, key_reused as _key_reused, register_idempotency
from commands.model import (
    AddSynonyms, BatchCommit, CommitMemory, CorrectMemory, DeleteMemory, DeprecateMemory, GiveFeedback,
    IdempotencyRequest, Limits, RegisterAgent,
)
from commands.rules.forgetting import ForgetCandidate
from events.catalogue import AgentKeyRevoked, AgentKeyRotated, new_event
from events.envelope import Event
from events.errors import GuardFailed, IdempotencyConflict
from events.redis import keys
from events.redis.client import TRANSIENT_ERRORS
from events.redis.indexes import AgentIndex, Guard, MemoryIndex
from events.redis.store import AppendResult, EventStore, Idempotency

log = structlog.get_logger(__name__)

DELETE_RETRIES = 3
K = TypeVar("K")
V = TypeVar("V")
Chosen = TypeVar("Chosen")


def hash_api_key(api_key: str) -> str:
    return hashlib.sha256(api_key.encode()).hexdigest()


def new_api_key() -> str:
    return "zk_" + secrets.token_urlsafe(32)


def new_memory_id() -> str:
    return str(uuid.uuid4())


def _registered(res: AppendResult) -> Registered:
    blob = orjson.loads(res.result)
    return Registered(blob["agent_id"], blob["api_key"], blob["namespaces"], res.position)


def _remember(cache: dict[K, V], key: K, value: V) -> None:
    if len(cache) >= ACTOR_CACHE_SIZE:
        cache.pop(next(iter(cache)))
    cache[key] = value


@dataclass(frozen=True, slots=True)
class Registered:
    agent_id: str
    api_key: str
    namespaces: list[str]
    position: str


@dataclass(frozen=True, slots=True)
class Committed:
    memory_id: str
    namespace: str
    version: int
    position: str
    duplicate: bool = False
    conflicts: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class BatchCommitted:
    results: list[tuple[str, str]]  # (memory_id, position)
    position: str
    duplicate: bool = False
    conflicts: list[list[dict[str, Any]]] = field(default_factory=list)   # per entry


@dataclass(frozen=True, slots=True)
class Changed:
    """A versioned change of one memory (delete, deprecate, correct): its new version and position."""

    memory_id: str
    version: int
    position: str


@dataclass(frozen=True, slots=True)
class Forgot:
    forgotten: list[ForgetCandidate]
    position: str


@dataclass(frozen=True, slots=True)
class FeedbackGiven:
    memory_id: str
    verdict: str
    position: str


@dataclass(frozen=True, slots=True)
class SynonymsAdded:
    term: str
    synonyms: list[str]
    namespace: str
    position: str


ACTOR_CACHE_SIZE = 10_000


@dataclass
class CommandService:
    store: EventStore
    limits: Limits = field(default_factory=Limits)
    make_memory_id: Callable[[], str] = new_memory_id
    make_api_key: Callable[[], str] = new_api_key
    conflicts: ConflictDetector | None = None   # None: commits are not checked for contradictions
    # An agent's namespaces never change, so they are cached in-process. Its key can (rotated,
    # revoked): a lookup asks Redis unless the caller read the keys' version (AGENT_KEYS_VERSION, which
    # every key write changes) after its request arrived and the answer kept was read at that version,
    # so an old key is refused at once by every gateway; the last answers also serve while Redis cannot
    # be reached.
    _agents: dict[str, Actor] = field(default_factory=dict, init=False, repr=False)
    _key_hashes: dict[str, tuple[str, str | None]] = field(default_factory=dict, init=False, repr=False)

    def forget_agents(self) -> None:
        """Drop the cached registrations: the log they came from was wiped or replaced."""
        self._agents.clear()
        self._key_hashes.clear()

    async def agent_for_api_key(self, api_key: str, keys_version: str | None = None) -> str | None:
        """The agent holding `api_key` (None: nobody). `keys_version`: the keys' version read after the
        request arrived (None: not known); the answer kept for the key is used when read at it."""
        key_hash = hash_api_key(api_key)
        kept = self._key_hashes.get(key_hash)
        if kept is not None and keys_version is not None and kept[1] == keys_version:
            return kept[0]
        try:
            agent_id = await self.store.agent_for_key_hash(key_hash)
        except TRANSIENT_ERRORS:
            if kept is not None:     # Redis away: the last answer for this key
                return kept[0]
            raise
        if agent_id is None:
            self._key_hashes.pop(key_hash, None)
        else:   # read at `keys_version` or later: a later write changes the version, so never kept too long
            _remember(self._key_hashes, key_hash, (agent_id, keys_version))
        return agent_id

    async def rotate_key(self, agent_id: str, idem: IdempotencyRequest | None = None, *,
                         by: str = "") -> Registered:
        """A new key for the agent; the old one is refused from this append on. Idempotent like a
        registration: a retry with the same Idempotency-Key answers the same new key."""
        idempotency = self._idempotency(f"{agent_id}:keys", idem) if idem else None
        if idempotency is not None and (previous := await self._replayed(idempotency)) is not None:
            return _registered(previous)
        index = await self._agent_index(agent_id)
        api_key = self.make_api_key()
        event = new_event(AgentKeyRotated(agent_id, hash_api_key(api_key), index.key_hash), ns=index.main_namespace,
                          agent=agent_id, by=by)
        blob = orjson.dumps({"agent_id": agent_id, "api_key": api_key,
                             "namespaces": [index.main_namespace, index.ephemeral_namespace, "shared"]})
        res = await self._append_keyed([event], idempotency, Guard(keys.agent(agent_id), "key", index.key_hash), blob)
        log.info("agent.key_rotated", agent=agent_id, by=by or "agent", position=res.position)
        return _registered(res)

    async def revoke_key(self, agent_id: str, *, by: str = "") -> str:
        """Withdraw the agent's key (no key works for it until one is rotated in); the position."""
        index = await self._agent_index(agent_id)
        if not index.key_hash:
            raise Conflict(f"agent {agent_id} has no key to revoke", {"agent_id": agent_id})
        event = new_event(AgentKeyRevoked(agent_id, index.key_hash), ns=index.main_namespace, agent=agent_id, by=by)
        res = await self._append_keyed([event], None, Guard(keys.agent(agent_id), "key", index.key_hash), b"{}")
        log.info("agent.key_revoked", agent=agent_id, by=by or "agent", position=res.position)
        return res.position

    async def _agent_index(self, agent_id: str) -> AgentIndex:
        index = await self.store.agent_index(agent_id)
        if index is None:
            raise NotFound(f"agent {agent_id} is not registered", {"agent_id": agent_id}, code=ErrorCode.UNKNOWN_AGENT)
        return index

    async def _append_keyed(self, events: list[Event], idempotency: Idempotency | None, guard: Guard,
                            blob: bytes) -> AppendResult:
        try:
            return await self.store.append(events, idempotency=idempotency, guards=[guard], result=blob)
        except GuardFailed as exc:
            raise Conflict("the agent's key changed concurrently: try again", {}) from exc
        except IdempotencyConflict as exc:
            assert idempotency is not None
            raise _key_reused(idempotency) from exc

    async def actor_for(self, agent_id: str, *, by: str = "") -> Actor | None:
        actor = self._agents.get(agent_id)
        if actor is None:
            idx = await self.store.agent_index(agent_id)
            if idx is None:
                return None
            actor = Actor(idx.agent_id, idx.main_namespace, idx.ephemeral_namespace)
            _remember(self._agents, agent_id, actor)
        return actor if actor.by == by else Actor(actor.agent_id, actor.main_namespace, actor.ephemeral_namespace, by)

    async def register_agent(self, cmd: RegisterAgent, idem: IdempotencyRequest | None = None) -> Registered:
        """Register an agent and hand out its key. Idempotent: a retry with the same Idempotency-Key
        (or, without one, the same request within the idempotency window) answers the same `api_key`,
        whose plaintext lives only in the idempotency record (the event holds its sha256)."""
        idempotency = register_idempotency(cmd, idem)
        try:
            previous = await self.store.replayed(idempotency)
            if previous is not None:
                return _registered(previous)
            api_key = self.make_api_key()
            existing = await self.store.agent_index(cmd.agent_id)
            main = cmd.namespace or f"{cmd.agent_id}-main"
            main_owner = await self.store.namespace_owner(main)
            eph_owner = await self.store.namespace_owner(f"{cmd.agent_id}-ephemeral")
            decision = decide_register(cmd, existing, main_owner, eph_owner, hash_api_key(api_key))
            data = decision.events[0].data
            blob = orjson.dumps({"agent_id": cmd.agent_id, "api_key": api_key,
                                 "namespaces": [data.main_namespace, data.ephemeral_namespace, "shared"]})
            res = await self.store.append(decision.events, idempotency=idempotency, guards=decision.guards,
                                          result=blob)
        except GuardFailed as exc:  # lost a race with a concurrent registration
            raise Conflict(f"agent {cmd.agent_id} or its namespace was registered concurrently",
                           {"agent_id": cmd.agent_id}, code=ErrorCode.AGENT_EXISTS) from exc
        except IdempotencyConflict as exc:
            raise _key_reused(idempotency) from exc
        if not res.duplicate:
            log.info("agent.registered", agent=cmd.agent_id, ns=data.main_namespace, position=res.position)
        return _registered(res)

    async def commit(self, actor: Actor, cmd: CommitMemory, idem: IdempotencyRequest | None = None) -> Committed:
        memory_id = self.make_memory_id()
        # a retry whose dependency went meanwhile still answers the original (checked before deciding)
        res = await self._replay(actor, idem) if cmd.depends_on else None
        if res is None:
            known = await self.store.memory_indexes(cmd.depends_on)
            event = decide_commit(actor, cmd, memory_id, known)
            events, found = await self._with_conflicts([event])
            blob = orjson.dumps({"memory_id": memory_id, "namespace": event.ns, "version": 1,
                                 "conflicts": found[0]})
            res = await self._append(events, actor, idem, blob)
        if res.duplicate:
            orig = orjson.loads(res.result)
            return Committed(orig["memory_id"], orig["namespace"], orig["version"], res.position, True,
                             orig.get("conflicts", []))
        return Committed(memory_id, event.ns, 1, res.position, conflicts=found[0])

    async def batch_commit(self, actor: Actor, cmd: BatchCommit,
                           idem: IdempotencyRequest | None = None) -> BatchCommitted:
        deps = sorted({d for entry in cmd.entries for d in entry.depends_on})
        res = await self._replay(actor, idem) if deps else None
        if res is None:
            known = await self.store.memory_indexes(deps)
            ids = [self.make_memory_id() for _ in cmd.entries]
            commits = [decide_commit(actor, entry, mid, known) for entry, mid in zip(cmd.entries, ids)]
            events, found = await self._with_conflicts(commits)
            res = await self._append(events, actor, idem, orjson.dumps({"ids": ids, "conflicts": found}))
        if res.duplicate:
            orig = orjson.loads(res.result)
            ids, found = orig["ids"], orig.get("conflicts", [[] for _ in orig["ids"]])
        # the entries' memory.committed come first, their conflict.detected events after them
        return BatchCommitted(list(zip(ids, res.positions[:len(ids)])), res.position, res.duplicate, found)

    async def _with_conflicts(self, commits: list[Event]) -> tuple[list[Event], list[list[dict[str, Any]]]]:
        """The commits, then their `conflict.detected` events; and each commit's reported conflicts."""
        if self.conflicts is None:
            return commits, [[] for _ in commits]
        founds = await self.conflicts.conflicts(commits)
        detected = [e for commit, found in zip(commits, founds) for e in detected_events(commit, found)]
        return [*commits, *detected], [reported(found) for found in founds]

    async def delete(self, actor: Actor, cmd: DeleteMemory, idem: IdempotencyRequest | None = None) -> Changed:
        return await self._versioned(cmd.memory_id, lambda current: decide_delete(actor, cmd, current), "delete",
                                     self._idempotency(actor.agent_id, idem))

    async def deprecate(self, actor: Actor, cmd: DeprecateMemory, idem: IdempotencyRequest | None = None) -> Changed:
        return await self._versioned(cmd.memory_id, lambda current: decide_deprecate(actor, cmd, current),
                                     "deprecate", self._idempotency(actor.agent_id, idem))

    async def correct(self, actor: Actor, cmd: CorrectMemory, idem: IdempotencyRequest | None = None) -> Changed:
        return await self._versioned(cmd.memory_id, lambda current: decide_correct(actor, cmd, current), "correct",
                                     self._idempotency(actor.agent_id, idem))

    async def feedback(self, actor: Actor, cmd: GiveFeedback, idem: IdempotencyRequest | None = None) -> FeedbackGiven:
        res = await self._replay(actor, idem)  # a retry answers the original, whatever happened since
        if res is None:
            event = decide_feedback(actor, cmd, await self.store.memory_index(cmd.memory_id))
            res = await self._append([event], actor, idem, b"{}")
        return FeedbackGiven(cmd.memory_id, cmd.verdict, res.position)

    async def forget(self, plan: Callable[[], Awaitable[list[ForgetCandidate]]], *, by: str = "admin") -> Forgot:
        """Run `plan()` (the forget candidates, read from the projection) and append one
        `memory.forgotten` per candidate; when a memory changed meanwhile, plan again."""
        chosen, position = await self.planned(plan, lambda cands: decide_forget(cands, by=by), "forget")
        return Forgot(chosen, position)

    async def planned(self, plan: Callable[[], Awaitable[list[Chosen]]], decide: Callable[[list[Chosen]], Decision],
                      what: str) -> tuple[list[Chosen], str]:
        """Run `plan()` (memories chosen from a projection, each with the version it was chosen
        at), append `decide(chosen)` guarded by those versions; when one changed meanwhile, plan
        again. Returns (chosen, position); ([], "") when nothing was chosen."""
        for attempt in range(DELETE_RETRIES):
            chosen = await plan()
            if not chosen:
                return [], ""
            decision: Decision = decide(chosen)
            try:
                res = await self.store.append(decision.events, guards=decision.guards)
            except GuardFailed:
                log.info(f"{what}.retry", attempt=attempt)
                continue
            log.info(f"{what}.done", events=len(decision.events), position=res.position)
            return chosen, res.position
        raise Conflict(f"memories are changing too fast for a {what} run; retry", {}, code=ErrorCode.VERSION_CONFLICT)

    async def _versioned(self, memory_id: str, decide: Callable[[MemoryIndex | None], Decision], what: str,
                         idempotency: Idempotency | None = None) -> Changed:
        """Decide on the current version and append guarded by it; on a race, decide again. A key
        seen before answers the original change (checked first: that change moved the version)."""
        if idempotency is not None and (previous := await self._replayed(idempotency)) is not None:
            event = await self.store.get(previous.position)
            return Changed(memory_id, event.data.version if event else 0, previous.position)
        for attempt in range(DELETE_RETRIES):
            current = await self.store.memory_index(memory_id)
            decision: Decision = decide(current)
            try:
                res = await self.store.append(decision.events, guards=decision.guards, idempotency=idempotency)
            except GuardFailed:
                # The memory changed between our read and the append: decide again on fresh state
                # (an explicit expected_version will then be reported as stale).
                log.info(f"{what}.retry", memory_id=memory_id, attempt=attempt)
                continue
            except IdempotencyConflict as exc:
                raise _key_reused(idempotency) from exc
            if res.duplicate:  # a concurrent request with the same key won
                return await self._versioned(memory_id, decide, what, idempotency)
            version = res.version if res.version is not None else decision.events[0].data.version
            return Changed(memory_id, version, res.position)
        raise Conflict(f"memory {memory_id} is changing too fast; retry", {"memory_id": memory_id},
                       code=ErrorCode.VERSION_CONFLICT)

    async def add_synonyms(self, cmd: AddSynonyms, idem: IdempotencyRequest | None = None) -> SynonymsAdded:
        event = decide_add_synonyms(cmd)
        try:
            res = await self.store.append([event], idempotency=self._idempotency(ADMIN_SCOPE, idem))
        except IdempotencyConflict as exc:
            raise _key_reused(self._idempotency(ADMIN_SCOPE, idem)) from exc
        data = event.data
        log.info("synonym.added", term=data.term, ns=data.namespace, position=res.position)
        return SynonymsAdded(data.term, list(data.synonyms), data.namespace, res.position)

    async def _append(self, events: list[Event], actor: Actor, idem: IdempotencyRequest | None,
                      blob: bytes) -> AppendResult:
        idempotency = self._idempotency(actor.agent_id, idem)
        try:
            return await self.store.append(events, idempotency=idempotency, result=blob)
        except IdempotencyConflict as exc:
            raise _key_reused(idempotency) from exc

    @staticmethod
    def _idempotency(scope: str, idem: IdempotencyRequest | None) -> Idempotency | None:
        return Idempotency(scope, idem.key, idem.fingerprint) if idem else None

    async def _replay(self, actor: Actor, idem: IdempotencyRequest | None) -> AppendResult | None:
        idempotency = self._idempotency(actor.agent_id, idem)
        return await self._replayed(idempotency) if idempotency else None

    async def _replayed(self, idempotency: Idempotency) -> AppendResult | None:
        try:
            return await self.store.replayed(idempotency)
        except IdempotencyConflict as exc:
            raise _key_reused(idempotency) from exc

    async def require_actor(self, agent_id: str, *, by: str = "") -> Actor:
        actor = await self.actor_for(agent_id, by=by)
        if actor is None:
            raise NotFound(f"agent {agent_id} is not registered", {"agent_id": agent_id}, code=ErrorCode.UNKNOWN_AGENT)
        return actor
