"""The event store: the ONLY writer of the stream `zhiyi:events`, and its reader for everyone but the
reactions' consumer group.

`events/redis/` is the only package that touches Redis; within it, this module alone appends to the
stream, reads it (XRANGE, XREVRANGE, XREAD) and keeps the checkpoints, generations, epoch and
write-side indexes. The other modules there: `consumer_groups` (the reactions runner reads the
stream through its consumer group: XREADGROUP, XPENDING, XCLAIM, XACK, and writes the dead-letter
stream), `counters` (commands' counters and flags), `answer_cache` (cached recall answers),
`server_info` (probing and stopping a server), `checkpoint_groups` (checkpoint publishes, grouped).

Appends go through one Lua script (`append.lua`) that atomically honours an idempotency
key, checks guards (expected versions, absent keys), stamps each event with a hybrid
logical clock from Redis TIME, XADDs it and updates the write-side indexes.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping, Sequence, cast

import orjson
import structlog
from redis.asyncio import Redis
from redis.commands.core import AsyncScript

from events import positions
from events.redis import keys
from events.redis.append_call import ScriptCall, call_script
from events.redis.checkpoint_groups import GroupedPublisher, reset_message
from events.codec import decode, encode_append_fields
from events.envelope import Event
from events.errors import GuardFailed, IdempotencyConflict, LogResetError
from events.redis.index_reads import WriteSideIndexes
from events.redis.indexes import Guard, index_ops
from events.redis.replies import as_str, entries, hash_to_str

log = structlog.get_logger(__name__)

_SCRIPT = resources.files("events.redis").joinpath("append.lua").read_text()
IDEMPOTENCY_TTL_S = 24 * 3600

DECODED_KEEP = 4096
"""Decoded events the runners' reads remember (`EventStore._decode`)."""
WAIT_AOF_MS = 5000
"""Durable mode: how long an append waits for its AOF fsync (appendfsync everysec: about a second)."""


@dataclass(frozen=True, slots=True)
class Idempotency:
    scope: str            # e.g. the acting agent id, or "reaction"
    key: str              # client's Idempotency-Key, or "cause:policy"
    fingerprint: str      # hash of the request body; same key + other body -> conflict


@dataclass(frozen=True, slots=True)
class AppendResult:
    positions: list[str]
    duplicate: bool = False      # True: the idempotency key was seen; nothing was appended
    result: bytes = b""          # the result blob stored with the original append
    version: int | None = None   # the version append.lua gave a next-version write (Guard.next_version)

    @property
    def position(self) -> str:
        return self.positions[-1] if self.positions else ""


@dataclass
class EventStore(WriteSideIndexes):
    redis: Redis
    origin: str
    durable: bool = False
    idempotency_ttl_s: int = IDEMPOTENCY_TTL_S
    epoch: str | None = None      # the log identity appends expect (see keys.EPOCH); None: learnt on first append
    wait_aof_ms: int = WAIT_AOF_MS
    local: Redis | None = None    # a LAN replica's own Redis: its checkpoints and generations (the log's is read-only)
    _script: AsyncScript = field(init=False, repr=False)
    _reads: dict[tuple[Any, ...], asyncio.Future[list[Event]]] = field(default_factory=dict, init=False, repr=False)
    _decoded: dict[str, tuple[Mapping[bytes, bytes], Event]] = field(default_factory=dict, init=False, repr=False)
    _publisher: GroupedPublisher = field(init=False, repr=False)
    _call: ScriptCall = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._script = self.redis.register_script(_SCRIPT)
        self._publisher = GroupedPublisher(self.redis)
        self._call = ScriptCall(_SCRIPT, self._script.sha, self.wait_aof_ms if self.durable else None)

    # ------------------------------------------------------------------ append

    async def append(
        self,
        events: Sequence[Event],
        *,
        idempotency: Idempotency | None = None,
        guards: Sequence[Guard] = (),
        result: bytes = b"",
        origin: str | None = None,
    ) -> AppendResult:
        """Append events atomically, in order. Raises GuardFailed / IdempotencyConflict; OutcomeUnknown
        when the script was sent but its answer (or, durable, its fsync) was not confirmed. `origin`:
        the instance the events come from (default: this store's; a LAN replica's operations carry
        the replica's id)."""
        if not events:
            raise ValueError("append needs at least one event")
        if len(events) > 1 and any(g.next_version for g in guards):
            raise ValueError("a next-version guard applies to a single event")
        epoch = self.epoch or await self.open_epoch()
        idem_key = keys.idempotency(idempotency.scope, idempotency.key) if idempotency else keys.PREFIX + "idem:-"
        script_keys: list[str] = [keys.STREAM, keys.HLC_STATE, idem_key]
        origin = origin or self.origin
        args: list[bytes | str | int] = [
            origin,
            idempotency.fingerprint if idempotency else "",
            self.idempotency_ttl_s,
            result,
            len(guards),
            len(events),
        ]
        for g in guards:
            script_keys.append(g.key)
            args += [g.field, g.mode, g.expected or ""]
        for ev in events:
            ops = index_ops(ev)
            script_keys.extend(op.key for op in ops)
            args.append(orjson.dumps([encode_append_fields(ev, origin),
                                      [[x for kv in op.mapping.items() for x in kv] for op in ops]]))
        reply = await call_script(self.redis, self._call, [keys.EPOCH, *script_keys], [epoch or "", *args])
        status = as_str(reply[0])
        if status == "log_reset":
            raise LogResetError(reset_message(epoch, as_str(reply[1]) if reply[1] else None))
        if status == "ok":
            pos = as_str(reply[1]).split(",")
            return AppendResult(pos, False, result, int(as_str(reply[2])) if len(reply) > 2 else None)
        if status == "dup":
            blob = reply[1] if isinstance(reply[1], bytes) else as_str(reply[1]).encode()
            return AppendResult(as_str(reply[2]).split(","), True, blob)
        if status == "idem_conflict":
            raise IdempotencyConflict(idempotency.key if idempotency else "")
        if status == "guard":
            actual = reply[2]
            raise GuardFailed(int(reply[1]), as_str(actual) if actual is not None else None)
        raise RuntimeError(f"unexpected append reply {reply!r}")

    async def replayed(self, idempotency: Idempotency) -> AppendResult | None:
        """The original append of this idempotency key (duplicate=True), None when the key is unused;
        IdempotencyConflict when it was used with another fingerprint. For a decision that depends on
        state the original append changed (a retried register must not see its own agent as taken)."""
        f, r, p = await self.redis.hmget(keys.idempotency(idempotency.scope, idempotency.key), ["f", "r", "p"])
        if f is None:
            return None
        if as_str(f) != idempotency.fingerprint:
            raise IdempotencyConflict(idempotency.key)
        return AppendResult(as_str(p).split(","), True, r if isinstance(r, bytes) else as_str(r).encode())

    async def release(self, idempotency: Idempotency) -> None:
        """Drop the record of an idempotency key whose append was confirmed and will not be retried
        (the audit writer's batch keys: kept only while a batch's outcome may be unknown)."""
        await self.redis.delete(keys.idempotency(idempotency.scope, idempotency.key))

    # ------------------------------------------------------------------ read

    async def read(self, start: str | None = None, end: str | None = None, count: int | None = None,
                   *, exclusive_start: bool = True) -> list[Event]:
        """Events after `start` (exclusive by default) up to `end` (inclusive), oldest first."""
        lo = "-" if not start else (f"({start}" if exclusive_start else start)
        hi = end or "+"
        reply = await self.redis.xrange(keys.STREAM, lo, hi, count=count)
        return [decode(pos, flds) for pos, flds in entries(reply)]

    async def read_reverse(self, end: str | None = None, start: str | None = None,
                           count: int | None = None) -> list[Event]:
        """Newest first, from `end` (inclusive) down to `start` (inclusive)."""
        reply = await self.redis.xrevrange(keys.STREAM, end or "+", start or "-", count=count)
        return [decode(pos, flds) for pos, flds in entries(reply)]

    async def iterate(self, start: str | None = None, end: str | None = None,
                      batch: int = 1000) -> AsyncIterator[list[Event]]:
        """Batches of events after `start` up to `end`, until the end is reached."""
        cursor = start
        while True:
            chunk = await self.read(cursor, end, batch)
            if not chunk:
                return
            yield chunk
            cursor = chunk[-1].position
            if len(chunk) < batch:
                return

    async def tail(self, after: str | None, *, count: int = 500, block_ms: int = 1000) -> list[Event]:
        """Events after `after`, waiting up to block_ms for new ones (XREAD BLOCK)."""
        reply = await self.redis.xread({keys.STREAM: after or "0-0"}, count=count, block=block_ms)
        if not reply:
            return []
        # RESP2 (client.connect pins the protocol): one [stream, entries] pair per stream read.
        (_, items), = cast("list[list[Any]]", reply)
        return [decode(pos, flds) for pos, flds in entries(items)]

    async def get(self, position: str) -> Event | None:
        reply = await self.redis.xrange(keys.STREAM, position, position, count=1)
        items = entries(reply)
        return decode(*items[0]) if items else None

    async def last_position(self) -> str | None:
        reply = await self.redis.xrevrange(keys.STREAM, "+", "-", count=1)
        items = entries(reply)
        return as_str(items[0][0]) if items else None

    async def length(self) -> int:
        return int(await self.redis.xlen(keys.STREAM))

    # ------------------------------------------------------------------ epoch (the log's identity)

    async def log_epoch(self) -> str | None:
        """The log's current epoch (None: the key is missing — a wiped log, or one not opened yet)."""
        val = await self.redis.get(keys.EPOCH)
        return as_str(val) if val is not None else None

    async def open_epoch(self, *, create: bool = True, adopt: bool = True) -> str | None:
        """Learn the log's epoch and expect it from now on (`self.epoch`).

        No epoch yet: an empty log gets a new one when `create`; a non-empty log written before
        epochs existed is adopted (given a new one, logged) when `adopt`. Otherwise None: appends
        are refused (LogResetError) until someone who may creates it (`zhiyi replay --in-place`).
        """
        current = await self.log_epoch()
        if current is None and self.local is None:   # a replica's log is the primary's: never created here
            length = await self.length()
            if (create and length == 0) or (adopt and length > 0):
                await self.redis.set(keys.EPOCH, new_epoch(), nx=True)
                current = await self.log_epoch()
                log.info("log.epoch_created" if length == 0 else "log.epoch_adopted", epoch=current, events=length)
        self.epoch = current
        return current

    async def check_not_reset(self, checkpoint: str | None, epoch: str | None = None) -> None:
        """Raise LogResetError unless the event at `checkpoint` is still in the log and, when
        `epoch` is given, the log's epoch is that one (the one the caller's projections were folded from).

        The log is never trimmed, so a checkpoint's own event exists for as long as the log it
        was taken from does. Checking that exact id (not just "is the last id behind it?")
        also catches a log that was lost and has since received new appends, whose time-based
        ids all lie beyond any old checkpoint.
        """
        await self._checked(checkpoint, epoch, None)

    async def read_checked(self, after: str | None, epoch: str | None, end: str | None = None,
                           count: int | None = None) -> list[Event]:
        """`check_not_reset(after, epoch)`, then `read(after, end, count)`: one round trip.

        Callers in this process asking for the same read while one is in flight (the projection
        runners, folding the same log side by side) share it — its round trip and its decoding — when
        it finds events: those are events after `after` whenever it was sent. An empty answer is not
        shared (it may predate an append the caller knows of): the caller reads again itself."""
        lo = "-" if not after else f"({after}"

        def read() -> Awaitable[list[Event]]:
            return self._checked(after, epoch, lambda pipe: pipe.xrange(keys.STREAM, lo, end or "+", count=count))

        events, shared = await self._shared(("read", after, epoch, end, count), read)
        return events if events or not shared else await read()

    async def tail_checked(self, after: str | None, epoch: str | None, *, count: int = 500,
                           block_ms: int = 1000) -> list[Event]:
        """`check_not_reset(after, epoch)`, then `tail(after, ...)`: one round trip. Callers asking for the
        same tail while one is in flight share it, whatever their `block_ms` (an XREAD BLOCK answers as soon
        as anything after `after` is appended: its answer is as good as their own, an empty one early or late)."""

        def tail() -> Awaitable[list[Event]]:
            return self._checked(after, epoch, lambda pipe: pipe.xread({keys.STREAM: after or "0-0"}, count=count,
                                                                       block=block_ms), xread=True)

        return (await self._shared(("tail", after, epoch, count), tail))[0]

    async def _shared(self, key: tuple[Any, ...], read: Callable[[], Awaitable[list[Event]]]) -> tuple[list[Event], bool]:
        """(`read()`'s events, whether they came from an identical read already in flight). Each caller
        gets its own list (of the same immutable events)."""
        key = (asyncio.get_running_loop(), *key)
        running = self._reads.get(key)
        if running is not None:
            return list(await asyncio.shield(running)), True
        task = asyncio.ensure_future(read())
        self._reads[key] = task
        task.add_done_callback(lambda t: self._read_done(key, t))
        return list(await asyncio.shield(task)), False

    def _read_done(self, key: tuple[Any, ...], task: asyncio.Future[list[Event]]) -> None:
        if self._reads.get(key) is task:
            del self._reads[key]
        if not task.cancelled():
            task.exception()   # retrieved: its callers (if any are left) raise it themselves

    async def _checked(self, checkpoint: str | None, epoch: str | None, then: Callable[[Any], Any] | None, *,
                       xread: bool = False) -> list[Event]:
        """The reset checks of `check_not_reset` and, when `then` adds a read of the stream (XRANGE or
        XREAD) to the pipeline, that read's events: one round trip, the read after the checks."""
        target = checkpoint if checkpoint and checkpoint != positions.ZERO else None  # None: no event to find
        if epoch is None and target is None and then is None:
            return []
        pipe = self.redis.pipeline(transaction=False)
        if epoch is not None or target is not None:
            pipe.get(keys.EPOCH)
            if target is not None:
                pipe.xrange(keys.STREAM, target, target, count=1)
        if then is not None:
            then(pipe)
        replies = await pipe.execute()
        if epoch is not None or target is not None:
            found = replies[0]
            if epoch is not None and (as_str(found) if found is not None else None) != epoch:
                raise LogResetError(reset_message(epoch, as_str(found) if found is not None else None))
            if target is not None and not entries(replies[1]):
                last = await self.last_position()
                raise LogResetError(
                    f"checkpoint {checkpoint} is not an event of this log (last position {last or 'none'}): "
                    "the log was lost or replaced; rebuild the projections (zhiyi replay) instead of skipping")
        if then is None:
            return []
        reply = replies[-1]
        if xread:
            if not reply:
                return []
            (_, reply), = cast("list[list[Any]]", reply)   # RESP2: one [stream, entries] pair per stream read
        return [self._decode(pos, flds) for pos, flds in entries(reply)]

    def _decode(self, position: str, fields: Mapping[bytes, bytes]) -> Event:
        """`codec.decode`, remembered for the last DECODED_KEEP entries the runners read (they read the same
        events side by side): an entry decoded before, with the same fields, gives the same (immutable) event."""
        seen = self._decoded.get(position)
        if seen is not None and seen[0] == fields:
            return seen[1]
        event = decode(position, fields)
        self._decoded[position] = (fields, event)
        if len(self._decoded) > DECODED_KEEP:
            del self._decoded[next(iter(self._decoded))]
        return event

    # ------------------------------------------------------------------ checkpoints

    @property
    def state(self) -> Redis:
        """Where the checkpoints and generations live: the log's Redis, or a replica's own (`local`)."""
        return self.local if self.local is not None else self.redis

    async def publish_checkpoint(self, projector: str, position: str,
                                 generations: Mapping[str, str] | None = None, *, epoch: str | None = None) -> None:
        """Publish a checkpoint and, atomically with it, the namespaces whose reads it changed
        ({namespace: position}, see keys.GENERATIONS). With `epoch` (the log the projection was
        folded from), only while the log's epoch is that one: else LogResetError, nothing written."""
        if self.local is not None:   # a replica: the epoch is the replicated log's, the checkpoint its own
            if epoch is not None and (found := await self.log_epoch()) != epoch:
                raise LogResetError(reset_message(epoch, found))
            pipe = self.local.pipeline(transaction=True)
            pipe.hset(keys.CHECKPOINTS, projector, position)
            if generations:
                pipe.hset(keys.GENERATIONS,
                          mapping={keys.generation(projector, ns): pos for ns, pos in generations.items()})
            await pipe.execute()
            return
        if epoch is not None:
            await self._publisher.publish(epoch, projector, position, generations or {})
            return
        if not generations:
            await self.redis.hset(keys.CHECKPOINTS, projector, position)
            return
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(keys.CHECKPOINTS, projector, position)
        pipe.hset(keys.GENERATIONS, mapping={keys.generation(projector, ns): pos for ns, pos in generations.items()})
        await pipe.execute()

    async def clear_checkpoints(self) -> None:
        """Forget every published checkpoint and generation (projections replaced by a rebuild)."""
        await self.state.delete(keys.CHECKPOINTS, keys.GENERATIONS)

    async def generations(self, fields: Sequence[tuple[str, str]]) -> list[str]:
        """The generation of each (projector, namespace); "" for one never changed."""
        if not fields:
            return []
        vals = await self.state.hmget(keys.GENERATIONS, [keys.generation(p, ns) for p, ns in fields])
        return [as_str(v) if v is not None else "" for v in vals]

    async def checkpoints(self) -> dict[str, str]:
        return hash_to_str(await self.state.hgetall(keys.CHECKPOINTS))

    async def checkpoint(self, projector: str) -> str | None:
        val = await self.state.hget(keys.CHECKPOINTS, projector)
        return as_str(val) if val is not None else None

    # ------------------------------------------------------------------ liveness

    async def ping(self) -> bool:
        try:
            return bool(await asyncio.wait_for(self.redis.ping(), timeout=1.0))
        except Exception:  # noqa: BLE001 - any failure means unreachable
            return False


def new_epoch() -> str:
    return secrets.token_hex(8)
