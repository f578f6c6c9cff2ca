"""The admin event browser (`zhiyi events ls|show|tail|stats`): filtering and scanning, read
through the event store. Its terminal rendering is the command line's (`gateway.cli.events`).

Positions are compared as integer pairs (events.positions), never as strings. Time filters use
the wall time of each event's HLC stamp; they are also turned into stream-id bounds (ids are ms
timestamps) widened by `SLACK_MS`, and every candidate is still checked with `matches`.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, AsyncGenerator

from events import positions
from events.envelope import Event
from events.hlc import iso_from_ms

if TYPE_CHECKING:
    from events.redis.store import EventStore

SLACK_MS = 60_000                  # HLC wall time vs stream-id time: widen id bounds by this
MAX_SEQ = 2**64 - 1
_RELATIVE_RE = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


# -- time and positions

def parse_time(text: str, *, now: datetime | None = None) -> datetime:
    """ISO 8601 ("2026-12-02", "2026-12-02T10:00:00Z", "+08:00" offsets; naive = UTC) or a
    relative "30s", "15m", "2h", "7d", "1w" ago from `now` (or "now"). Returns an aware UTC datetime."""
    raw = (text or "").strip()
    now = (now or datetime.now(UTC)).astimezone(UTC)
    if raw.lower() == "now":
        return now
    m = _RELATIVE_RE.match(raw.lower())
    if m:
        return now - timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})
    try:
        dt = datetime.fromisoformat(raw)
    except ValueError:
        raise ValueError(f"invalid time {text!r} (use ISO 8601 like 2026-12-02T10:00:00Z, or 15m/2h/7d)") from None
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def to_ms(dt: datetime) -> int:
    """Epoch milliseconds, exactly (no float rounding); naive datetimes count as UTC."""
    return ((dt if dt.tzinfo else dt.replace(tzinfo=UTC)) - _EPOCH) // timedelta(milliseconds=1)


def position_before(position: str) -> str | None:
    """The greatest possible position strictly before `position` (None before 0-0)."""
    ms, seq = positions.parse(position)
    if seq > 0:
        return f"{ms}-{seq - 1}"
    return f"{ms - 1}-{MAX_SEQ}" if ms > 0 else None


def event_ms(event: Event) -> int:
    """Wall time of the event: its HLC, else the stream id's timestamp."""
    if event.hlc:
        return event.wall_ms
    return positions.timestamp_ms(event.position) if positions.is_valid(event.position) else 0


# -- filter

@dataclass(frozen=True)
class EventFilter:
    """Which events to show. Empty sets mean "any"; `start`/`end` and `since`/`until` are inclusive.

    `types` holds exact names or prefixes ("memory." or "memory.*")."""

    types: frozenset[str] = frozenset()
    namespaces: frozenset[str] = frozenset()
    agents: frozenset[str] = frozenset()
    since: datetime | None = None
    until: datetime | None = None
    start: str | None = None
    end: str | None = None
    _exact: frozenset[str] = field(default=frozenset(), init=False, repr=False, compare=False)
    _prefixes: tuple[str, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("types", "namespaces", "agents"):
            object.__setattr__(self, name, frozenset(getattr(self, name) or ()))
        for name in ("start", "end"):
            val = getattr(self, name) or None
            if val is not None and not positions.is_valid(val):
                raise ValueError(f"not a stream position: {val!r} (expected MS-SEQ, e.g. 1700000000000-0)")
            object.__setattr__(self, name, val)
        exact = {t for t in self.types if not t.endswith((".", ".*", "*"))}
        prefixes = tuple(sorted(t.rstrip("*") for t in self.types if t not in exact))
        object.__setattr__(self, "_exact", frozenset(exact))
        object.__setattr__(self, "_prefixes", prefixes)

    def matches(self, event: Event) -> bool:
        if self.types and event.type not in self._exact and not event.type.startswith(self._prefixes):
            return False
        if (self.namespaces and event.ns not in self.namespaces) or (self.agents and event.agent not in self.agents):
            return False
        if self.start or self.end:
            pos = positions.key(event.position)
            if (self.start and pos < positions.parse(self.start)) or (self.end and pos > positions.parse(self.end)):
                return False
        if self.since is None and self.until is None:
            return True
        ms = event_ms(event)
        return (self.since is None or ms >= to_ms(self.since)) and (self.until is None or ms <= to_ms(self.until))

    def bounds(self, slack_ms: int = SLACK_MS) -> tuple[str | None, str | None]:
        """Inclusive stream-id bounds (None = open) covering every event that may match."""
        lo, hi = self.start, self.end
        if self.since is not None:
            t = f"{max(0, to_ms(self.since) - slack_ms)}-0"
            lo = t if lo is None or positions.parse(t) > positions.parse(lo) else lo
        if self.until is not None:
            t = f"{max(0, to_ms(self.until) + slack_ms)}-{MAX_SEQ}"
            hi = t if hi is None or positions.parse(t) < positions.parse(hi) else hi
        return lo, hi


def _empty(lo: str | None, hi: str | None) -> bool:
    return bool(lo and hi) and positions.parse(lo) > positions.parse(hi)


# -- scanning

async def list_events(store: EventStore, flt: EventFilter, *, limit: int | None = 50,
                      newest_first: bool = False, page: int | None = None) -> list[Event]:
    """Up to `limit` matching events (None/0 = all), oldest first or newest first, read in pages."""
    lo, hi = flt.bounds()
    if _empty(lo, hi):
        return []
    size = page or min(max(limit or 0, 100), 1000)
    found: list[Event] = []
    cursor: str | None = lo if not newest_first else hi
    exclusive = False
    while not limit or len(found) < limit:
        if newest_first:
            chunk = await store.read_reverse(cursor, lo, size)
        else:
            chunk = await store.read(cursor, hi, size, exclusive_start=exclusive)
        found.extend(ev for ev in chunk if flt.matches(ev))
        if len(chunk) < size:
            break
        last = chunk[-1].position
        if newest_first:
            cursor = position_before(last)
            if cursor is None:
                break
        else:
            cursor, exclusive = last, True
    return found[:limit] if limit else found


async def follow(store: EventStore, flt: EventFilter, *, after: str | None = None,
                 stop: asyncio.Event | None = None, block_ms: int = 1000) -> AsyncGenerator[Event, None]:
    """Yield matching events appended after `after` (default: the current end of the log) until
    `stop` is set (noticed within `block_ms`) or the filter's `end` position is passed."""
    cursor = after if after is not None else (await store.last_position() or positions.ZERO)
    end = positions.parse(flt.end) if flt.end else None
    while stop is None or not stop.is_set():
        for ev in await store.tail(cursor, block_ms=block_ms):
            cursor = ev.position
            if end is not None and positions.parse(ev.position) > end:
                return
            if flt.matches(ev):
                yield ev
            if stop is not None and stop.is_set():
                return


@dataclass
class EventStats:
    total: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    by_ns: Counter[str] = field(default_factory=Counter)
    by_agent: Counter[str] = field(default_factory=Counter)
    first: str | None = None
    last: str | None = None
    first_ms: int | None = None
    last_ms: int | None = None

    def add(self, ev: Event) -> None:
        self.total += 1
        self.by_type[ev.type] += 1
        self.by_ns[ev.ns] += 1
        self.by_agent[ev.agent] += 1
        if self.first is None:
            self.first, self.first_ms = ev.position, event_ms(ev)
        self.last, self.last_ms = ev.position, event_ms(ev)

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "first": self.first, "last": self.last,
                "first_time": None if self.first_ms is None else iso_from_ms(self.first_ms),
                "last_time": None if self.last_ms is None else iso_from_ms(self.last_ms),
                "by_type": _ranked(self.by_type), "by_ns": _ranked(self.by_ns), "by_agent": _ranked(self.by_agent)}


def _ranked(counts: Counter[str]) -> dict[str, int]:
    """Most frequent first, then by name."""
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


async def count_stats(store: EventStore, flt: EventFilter, *, batch: int = 1000) -> EventStats:
    """Counts of the matching events by type, namespace and agent, with first/last position."""
    stats = EventStats()
    lo, hi = flt.bounds()
    if _empty(lo, hi):
        return stats
    async for chunk in store.iterate(position_before(lo) if lo else None, hi, batch):
        for ev in chunk:
            if flt.matches(ev):
                stats.add(ev)
    return stats
