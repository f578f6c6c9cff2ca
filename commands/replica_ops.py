"""The primary's side of LAN replicas (seed 4.1): replica keys, and the operations a replica learnt
locally (recall audits, feedback votes) applied to the log exactly once.

- `register(instance_id)` issues a replica key (the event holds its sha256; a new key for the same
  instance revokes the old one).
- `apply(instance_id, ops)` appends each operation with `origin` = the replica's id under the
  idempotency scope `replica:{instance_id}` and the operation's id as key: a batch resent after a lost
  answer is answered `duplicate`, never appended twice. An operation the primary cannot accept (a
  memory deleted while the replica was cut off, an agent unknown) is `rejected` with its error code;
  the replica drops it (logged) instead of retrying it for ever.
- Recall counts are per-origin G-counters (each `recall.served` from a replica counts under the
  replica's origin); a feedback vote is the agent's last-writer-wins register ordered by the HLC at
  which the replica observed it (`memory.feedback.observed_at`), so a vote buffered during a
  partition does not overwrite a later one given to the primary directly.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Any

import orjson
import structlog

from commands.decide import decide_feedback
from commands.error_codes import ErrorCode
from commands.errors import CommandError, InvalidCommand
from commands.handlers import CommandService, hash_api_key
from commands.model import GiveFeedback
from commands.parsing import AGENT_ID_RE, MEMORY_ID_RE, is_text
from events.catalogue import RecallServed, ReplicaRegistered, new_event, payload_from_dict
from events.envelope import Event
from events.errors import IdempotencyConflict
from events.hlc import HLC
from events.redis.store import EventStore, Idempotency


log = structlog.get_logger(__name__)

INSTANCE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
OP_ID_RE = re.compile(r"^[\x21-\x7e]{1,128}$")
MAX_OPS = 500              # operations per request
MAX_AUDIT_EVENTS = 500     # recall audits per operation (the replica's audit batches hold 200)
MAX_REASON_CHARS = 2000
MAX_QUERY_CHARS = 10_000
MAX_RESULTS = 1000
VERDICTS = ("useful", "not_useful")
OP_FIELDS = {"feedback": frozenset({"op_id", "kind", "agent_id", "memory_id", "verdict", "reason", "observed_at"}),
             "recall_served": frozenset({"op_id", "kind", "events"})}
AUDIT_FIELDS = frozenset({"ns", "agent", "by", "data"})
SCOPE_PREFIX = "replica:"


def scope(instance_id: str) -> str:
    """The idempotency scope of one replica's operations."""
    return SCOPE_PREFIX + instance_id


def new_replica_key() -> str:
    return "zrk_" + secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class OpResult:
    op_id: str
    status: str                # applied | duplicate | rejected
    position: str = ""
    code: str = ""             # rejected: the error code
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op_id": self.op_id, "status": self.status}
        if self.position:
            out["position"] = self.position
        if self.status == "rejected":
            out["error"] = {"code": self.code, "message": self.message}
        return out


@dataclass(frozen=True, slots=True)
class Op:
    """One validated operation: its id, kind, the events it appends (decided on the primary for a
    vote) and, for a vote, what to decide it from."""

    op_id: str
    kind: str
    fingerprint: str
    agent_id: str = ""
    feedback: GiveFeedback | None = None
    observed_at: str = ""
    audits: tuple[Event, ...] = ()


def _fail(where: str, message: str) -> InvalidCommand:
    return InvalidCommand(f"{where}: {message}", {"field": where})


def parse_ops(body: Any) -> list[Op]:
    """`{ops: [...]}` of `POST /api/v1/replicas/{id}/ops`: every operation checked before any is applied
    (a malformed batch is a 400, nothing appended)."""
    ops = body.get("ops", []) if isinstance(body, dict) else None
    if not isinstance(ops, list):
        raise _fail("ops", "must be a list")
    if len(ops) > MAX_OPS:
        raise _fail("ops", f"at most {MAX_OPS} operations per request")
    parsed = [parse_op(raw, f"ops[{i}]") for i, raw in enumerate(ops)]
    seen: set[str] = set()
    for op in parsed:
        if op.op_id in seen:
            raise _fail("ops", f"op_id {op.op_id!r} appears twice")
        seen.add(op.op_id)
    return parsed


def parse_op(raw: Any, where: str) -> Op:
    if not isinstance(raw, dict):
        raise _fail(where, "must be an object")
    kind = raw.get("kind")
    if kind not in OP_FIELDS:
        raise _fail(f"{where}.kind", f"must be one of {', '.join(OP_FIELDS)}")
    unknown = sorted(set(raw) - OP_FIELDS[kind])
    if unknown:
        raise _fail(f"{where}.{unknown[0]}", f"unknown field of a {kind} operation")
    op_id = raw.get("op_id")
    if not isinstance(op_id, str) or not OP_ID_RE.fullmatch(op_id):
        raise _fail(f"{where}.op_id", "must be 1-128 printable ASCII characters")
    fingerprint = hashlib.sha256(orjson.dumps(raw, option=orjson.OPT_SORT_KEYS)).hexdigest()
    if kind == "feedback":
        return _parse_feedback(raw, where, op_id, fingerprint)
    return _parse_audits(raw, where, op_id, fingerprint)


def _parse_feedback(raw: dict[str, Any], where: str, op_id: str, fingerprint: str) -> Op:
    agent_id, memory_id, verdict = raw.get("agent_id"), raw.get("memory_id"), raw.get("verdict")
    if not isinstance(agent_id, str) or not AGENT_ID_RE.fullmatch(agent_id):
        raise _fail(f"{where}.agent_id", "must be an agent id")
    if not isinstance(memory_id, str) or not MEMORY_ID_RE.fullmatch(memory_id):
        raise _fail(f"{where}.memory_id", "has an invalid format")
    if verdict not in VERDICTS:
        raise _fail(f"{where}.verdict", "must be useful or not_useful")
    reason = raw.get("reason", "")
    if not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS:
        raise _fail(f"{where}.reason", f"must be a string of at most {MAX_REASON_CHARS} characters")
    observed = raw.get("observed_at")
    if not isinstance(observed, str) or not valid_hlc(observed):
        raise _fail(f"{where}.observed_at", "must be an HLC stamp wall_ms:counter:node")
    return Op(op_id, "feedback", fingerprint, agent_id, GiveFeedback(memory_id, verdict, reason.strip()),
              observed_at=observed)


def _parse_audits(raw: dict[str, Any], where: str, op_id: str, fingerprint: str) -> Op:
    events = raw.get("events")
    if not isinstance(events, list) or not events or len(events) > MAX_AUDIT_EVENTS:
        raise _fail(f"{where}.events", f"must be a list of 1 to {MAX_AUDIT_EVENTS} recall audits")
    out = []
    for j, item in enumerate(events):
        at = f"{where}.events[{j}]"
        if not isinstance(item, dict) or set(item) - AUDIT_FIELDS or not isinstance(item.get("data"), dict):
            raise _fail(at, "must be {ns, agent, by, data}")
        texts = [item.get(k, "") for k in ("ns", "agent", "by")]
        if not all(isinstance(t, str) and len(t) <= 128 for t in texts):
            raise _fail(at, "ns, agent and by must be strings of at most 128 characters")
        try:
            data = payload_from_dict("recall.served", 1, item["data"])
        except Exception as exc:  # noqa: BLE001 - any shape error of the payload is the caller's
            raise _fail(f"{at}.data", f"is not a recall.served payload ({type(exc).__name__})") from None
        _check_audit(data, at)
        out.append(new_event(data, ns=texts[0], agent=texts[1], by=texts[2]))
    return Op(op_id, "recall_served", fingerprint, audits=tuple(out))


def _check_audit(d: RecallServed, at: str) -> None:
    if not isinstance(d.query, str) or len(d.query) > MAX_QUERY_CHARS:
        raise _fail(f"{at}.data.query", f"must be a string of at most {MAX_QUERY_CHARS} characters")
    if len(d.result_ids) > MAX_RESULTS or len(d.scores) != len(d.result_ids):
        raise _fail(f"{at}.data", "result_ids and scores must be lists of the same length")
    if not all(isinstance(m, str) for m in (*d.result_ids, *d.namespaces)):
        raise _fail(f"{at}.data", "result_ids and namespaces must hold strings")
    if not all(isinstance(s, (int, float)) and not isinstance(s, bool) for s in d.scores):
        raise _fail(f"{at}.data.scores", "must hold numbers")
    if not isinstance(d.top_k, int) or isinstance(d.top_k, bool):
        raise _fail(f"{at}.data.top_k", "must be an integer")


def valid_hlc(text: str) -> bool:
    try:
        h = HLC.parse(text)
    except ValueError:
        return False
    return h.wall_ms > 0 and h.counter >= 0 and bool(h.node) and len(text) <= 200 and is_text(h.node)


@dataclass
class ReplicaOps:
    store: EventStore
    commands: CommandService

    async def register(self, instance_id: str) -> str:
        """A new replica key for `instance_id` (returned once; the log holds its sha256)."""
        key = new_replica_key()
        event = new_event(ReplicaRegistered(instance_id, hash_api_key(key)), ns="", agent="admin", by="admin")
        await self.store.append([event])
        log.info("replica.registered", instance_id=instance_id)
        return key

    async def key_matches(self, instance_id: str, key: str) -> bool:
        stored = await self.store.replica_key_hash(instance_id)
        return stored is not None and hmac.compare_digest(stored, hash_api_key(key))

    async def apply(self, instance_id: str, ops: list[Op]) -> list[OpResult]:
        """Each operation appended once (in order); see the module doc."""
        return [await self._apply(instance_id, op) for op in ops]

    async def _apply(self, instance_id: str, op: Op) -> OpResult:
        idem = Idempotency(scope(instance_id), op.op_id, op.fingerprint)
        try:
            previous = await self.store.replayed(idem)
            if previous is not None:
                return OpResult(op.op_id, "duplicate", previous.position)
            events = list(op.audits) if op.kind == "recall_served" else [await self._vote(op)]
            res = await self.store.append(events, idempotency=idem, origin=instance_id)
        except IdempotencyConflict:
            return OpResult(op.op_id, "rejected", code=ErrorCode.IDEMPOTENCY_KEY_REUSED,
                            message=f"op_id {op.op_id} was used before for another operation")
        except CommandError as exc:
            log.info("replica.op_rejected", instance_id=instance_id, op_id=op.op_id, code=str(exc.code),
                     error=exc.message)
            return OpResult(op.op_id, "rejected", code=str(exc.code), message=exc.message)
        return OpResult(op.op_id, "duplicate" if res.duplicate else "applied", res.position)

    async def _vote(self, op: Op) -> Event:
        assert op.feedback is not None
        actor = await self.commands.require_actor(op.agent_id)
        event = decide_feedback(actor, op.feedback, await self.store.memory_index(op.feedback.memory_id),
                                observed_at=op.observed_at)
        return event
