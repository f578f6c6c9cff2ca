"""Reading the log out as it is stored (for backups): every entry's original stream id and its raw
field/value pairs in stored order, exactly as tests/fixture_log.py loads them back; and the state
that goes with a position (the epoch, the hybrid logical clock's state, the reactions' group).

Nothing here decodes events: an archive must hold the log byte for byte, whatever its event types
and versions (the loader, `events.redis.log_loader`, XADDs the same pairs back).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, AsyncIterator

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from events import positions
from events.redis import keys
from events.redis.replies import as_str, hash_to_str

Entry = tuple[str, list[tuple[str, str]]]
"""One stream entry: (stream id, [(field, value), ...]) in stored order."""

READ_BATCH = 1000


@dataclass(frozen=True, slots=True)
class LogState:
    position: str | None          # the log's last entry (None: empty)
    epoch: str | None             # keys.EPOCH
    hlc: dict[str, str]           # keys.HLC_STATE ({w, c}), as it was right after `position`
    reactions: str | None         # the reactions group's last delivered id, at most `position` (None: no group)


def _entry(position: Any, fields: Any) -> Entry:
    if isinstance(fields, list):  # a flat reply: [k, v, k, v, ...]
        pairs = list(zip(fields[::2], fields[1::2]))
    else:
        pairs = list(fields.items())
    return as_str(position), [(as_str(k), as_str(v)) for k, v in pairs]


async def log_state(redis: Redis) -> LogState:
    """The last position, epoch and HLC state read atomically (one MULTI), then the reactions group."""
    pipe = redis.pipeline(transaction=True)
    pipe.xrevrange(keys.STREAM, "+", "-", count=1)
    pipe.get(keys.EPOCH)
    pipe.hgetall(keys.HLC_STATE)
    last, epoch, hlc = await pipe.execute()
    position = as_str(last[0][0]) if last else None
    reactions = None
    if position is not None:
        try:
            groups = await redis.xinfo_groups(keys.STREAM)
        except ResponseError:  # no stream (wiped meanwhile)
            groups = []
        for g in groups:
            if as_str(g["name"]) == keys.REACTIONS_GROUP:
                delivered = as_str(g["last-delivered-id"])
                reactions = delivered if positions.key(delivered) <= positions.key(position) else position
    return LogState(position, as_str(epoch) if epoch is not None else None, hash_to_str(hlc), reactions)


async def read_log(redis: Redis, after: str | None = None, until: str | None = None,
                   batch: int = READ_BATCH) -> AsyncIterator[list[Entry]]:
    """Batches of raw entries after `after` (exclusive; None: from the start) up to `until`
    (inclusive; None: the end), oldest first."""
    cursor = after
    hi = until or "+"
    while True:
        lo = f"({cursor}" if cursor else "-"
        reply = await redis.xrange(keys.STREAM, lo, hi, count=batch)
        chunk = [_entry(pos, fields) for pos, fields in reply or ()]
        if not chunk:
            return
        yield chunk
        cursor = chunk[-1][0]
        if len(chunk) < batch:
            return
