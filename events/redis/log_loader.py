"""Loading an exported log (a backup being restored) into a Redis.

This is the only writer of the stream `zhiyi:events` besides the event store's append script, and
it only ever writes into an EMPTY stream (or, forced, one it deleted first): each entry is XADDed
with its original stream id and raw field/value pairs (events.redis.log_export), in pipelined
batches; then the log's epoch and the hybrid logical clock's state are set, so appends after the
restore continue the restored log (same epoch: projections folded from it stay valid; HLC never
goes back). The caller then rebuilds the write-side indexes (`EventStore.rebuild_indexes()`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from events import positions
from events.errors import EventLogError
from events.redis import keys
from events.redis.log_export import Entry

LOAD_BATCH = 1000


class LogNotEmpty(EventLogError):
    """The target Redis already holds a log."""


class LoadFailed(EventLogError):
    """The entries to load are not a log (out of order)."""


@dataclass(frozen=True, slots=True)
class Loaded:
    events: int
    position: str | None   # the last loaded entry


async def load_log(redis: Redis, chunks: Iterable[Sequence[Entry]], *, epoch: str | None,
                   hlc: Mapping[str, str], force: bool = False, reactions: str | None = None,
                   batch: int = LOAD_BATCH) -> Loaded:
    """XADD every entry of `chunks` (in order, original ids) into the empty stream, then set the epoch
    key and the HLC state hash (and, with `reactions`, place the reactions' consumer group there: the
    events up to it were reacted to before the backup).

    Refuses (LogNotEmpty) unless the stream holds no entry; `force` DELETEs the stream (and its
    consumer groups) first. Raises LoadFailed when an entry's id is not after the previous one. The
    caller runs `EventStore.rebuild_indexes()` afterwards.
    """
    length = int(await redis.xlen(keys.STREAM))
    if length:
        if not force:
            raise LogNotEmpty(f"{keys.STREAM} already holds {length} events: a log is restored into an empty "
                              "Redis only (or forced, which deletes that log)")
        await redis.delete(keys.STREAM)
    n, last = 0, None
    pending: list[Entry] = []

    async def flush() -> None:
        pipe = redis.pipeline(transaction=False)
        for position, fields in pending:
            pipe.xadd(keys.STREAM, dict(fields), id=position)
        await pipe.execute()
        pending.clear()

    for chunk in chunks:
        for position, fields in chunk:
            if positions.key(position) <= positions.key(last):
                raise LoadFailed(f"entry {position} does not follow {last}: not a log in order")
            pending.append((position, fields))
            n, last = n + 1, position
            if len(pending) >= batch:
                await flush()
    if pending:
        await flush()
    pipe = redis.pipeline(transaction=True)
    if epoch is not None:
        pipe.set(keys.EPOCH, epoch)
    else:
        pipe.delete(keys.EPOCH)
    pipe.delete(keys.HLC_STATE)
    if hlc:
        pipe.hset(keys.HLC_STATE, mapping=dict(hlc))  # type: ignore[arg-type]  # redis-py: Mapping keys invariant
    await pipe.execute()
    if reactions is not None and last is not None:
        try:
            await redis.xgroup_create(keys.STREAM, keys.REACTIONS_GROUP, id=reactions)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
            await redis.xgroup_setid(keys.STREAM, keys.REACTIONS_GROUP, id=reactions)
    return Loaded(n, last)
