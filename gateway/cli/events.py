"""`zhiyi events ls|show|tail|stats`: the admin event browser's command line and its terminal
rendering (tables padded by display width, one-line summaries, JSON); the filtering and scanning are
`events.browse`.

`gateway/cli/main.py` calls `add_events_parser(subparsers)` while building its parser and, for the
`events` command, builds the EventStore and awaits `run_events_command(args, store)`.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import unicodedata
from contextlib import aclosing, suppress
from datetime import UTC, datetime
from typing import Any, Iterable, TextIO

import orjson

from events import browse, positions
from events.browse import EventStats, event_ms
from events.codec import payload_to_dict, to_json_dict
from events.envelope import Event
from events.hlc import iso_from_ms
from events.redis.store import EventStore


# -- rendering

def display_width(text: str) -> int:
    """Terminal columns: East Asian wide/fullwidth count 2, combining marks 0."""
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def pad(text: str, width: int) -> str:
    return text + " " * max(0, width - display_width(text))


def truncate(text: str, max_width: int) -> str:
    """Cut `text` to at most `max_width` columns, marking a cut with '…'."""
    if display_width(text) <= max_width:
        return text
    out, used = "", 0
    for ch in text:
        used += display_width(ch)
        if used > max_width - 1:
            break
        out += ch
    return out + "…"


def _clean(text: Any) -> str:
    return " ".join(str(text).split())


def _head(text: Any, n: int = 60) -> str:
    s = _clean(text)
    return s if len(s) <= n else s[:n] + "…"


def summarize(event: Event) -> str:
    """A short, one-line description of the payload."""
    d = payload_to_dict(event.data)
    if event.type == "recall.served":
        n = len(d.get("result_ids") or ())
        return f'query="{_head(d.get("query", ""))}" → {n} result{"" if n == 1 else "s"}'
    if event.type == "agent.registered":
        return f'{d.get("agent_id", "")} ({d.get("agent_type", "")}) main={d.get("main_namespace", "")}'
    if event.type.startswith("episode."):
        parts = [str(d.get("episode_id", ""))]
        if event.type == "episode.committed":
            parts += [f'{d.get("kind", "")}/{d.get("status", "")}', f'{len(d.get("turns") or ())} turns']
        elif event.type == "episode.distilled":
            parts += [str(d.get("status", "")), f'→ {len(d.get("distilled_to") or ())} memories']
        parts += [f'extractor={d["extractor"]}'] if d.get("extractor") else []
        parts += [f'reason={d["reason"]}'] if d.get("reason") else []
        return " ".join(parts)
    parts = [str(d["memory_id"])] if d.get("memory_id") else []
    parts += [f'v{d["version"]}'] if "version" in d else []
    parts += [_head(d["content"])] if d.get("content") else [f'query="{_head(d["query"])}"'] if d.get("query") else []
    parts += [f'reason="{_head(d["reason"])}"'] if d.get("reason") else []
    return " ".join(parts) or truncate(_clean(_dumps(d)), 80)


def event_time(event: Event) -> str:
    return iso_from_ms(event_ms(event))


def event_to_json(event: Event) -> dict[str, Any]:
    """`codec.to_json_dict` plus the HLC wall time as ISO 8601."""
    return {**to_json_dict(event), "time": event_time(event)}


def _dumps(obj: Any, *, indent: bool = False) -> str:
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2 if indent else 0, default=str).decode()


HEADER = ("POSITION", "TIME", "TYPE", "NS", "AGENT", "SUMMARY")
TAIL_WIDTHS = (15, 24, 20, 16, 16)   # fixed columns for `tail`, which cannot measure ahead


def _cells(ev: Event) -> tuple[str, ...]:
    return (ev.position, event_time(ev), ev.type, truncate(_clean(ev.ns) or "-", 24),
            truncate(_clean(ev.agent) or "-", 24), summarize(ev))


def _line(cells: tuple[str, ...], widths: tuple[int, ...]) -> str:
    return "  ".join([*(pad(c, w) for c, w in zip(cells, widths)), cells[-1]]).rstrip()


def format_table(events: Iterable[Event], *, widths: tuple[int, ...] | None = None, header: bool = True) -> str:
    """Fixed-width columns padded by display width (so Chinese text lines up): measured from the
    rows, or preset `widths` (`tail` prints rows as they come: TAIL_WIDTHS, header=False)."""
    rows = [*([HEADER] if header else []), *(_cells(ev) for ev in events)]
    if widths is None:
        if len(rows) == int(header):
            return "(no events)" if header else ""
        widths = tuple(max(display_width(r[i]) for r in rows) for i in range(5))
    return "\n".join(_line(r, widths) for r in rows)


def format_event(event: Event) -> str:
    """One event whole, as pretty JSON (non-ASCII kept as is)."""
    return _dumps(event_to_json(event), indent=True)


def format_jsonl(events: Iterable[Event]) -> str:
    """One compact JSON object per line (ls/tail --json)."""
    return "\n".join(_dumps(event_to_json(ev)) for ev in events)


def format_stats(stats: EventStats) -> str:
    """Totals, first/last position and counts by type, namespace and agent (most frequent first)."""
    if not stats.total:
        return "events: 0"
    lines = [f"events: {stats.total}",
             f"first:  {stats.first}  {iso_from_ms(stats.first_ms or 0)}",
             f"last:   {stats.last}  {iso_from_ms(stats.last_ms or 0)}"]
    data = stats.to_json()
    for title, key in (("by type", "by_type"), ("by namespace", "by_ns"), ("by agent", "by_agent")):
        names = {name or "-": n for name, n in data[key].items()}
        width = max(display_width(name) for name in names)
        lines += ["", f"{title}:"] + [f"  {pad(name, width)}  {n:>8}" for name, n in names.items()]
    return "\n".join(lines)


def format_stats_json(stats: EventStats) -> str:
    return _dumps(stats.to_json(), indent=True)


# -- the command line

class UsageError(ValueError):
    """An invalid argument value: reported argparse-style, exit status 2."""


def _limit(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError("must be >= 0 (0 = no limit)")
    return n


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--type", action="append", default=[], metavar="TYPE",
                   help="event type, or a prefix like memory. / memory.* (repeatable)")
    p.add_argument("--ns", action="append", default=[], metavar="NS", help="namespace (repeatable)")
    p.add_argument("--agent", action="append", default=[], metavar="AGENT", help="agent id (repeatable)")
    p.add_argument("--since", metavar="TIME", help="ISO 8601 (2026-12-02, 2026-12-02T10:00:00Z) or 15m/2h/7d ago")
    p.add_argument("--until", metavar="TIME", help="same formats as --since (inclusive)")
    p.add_argument("--from", dest="from_position", metavar="POSITION", help="first position (inclusive)")
    p.add_argument("--to", dest="to_position", metavar="POSITION", help="last position (inclusive)")
    p.add_argument("--json", action="store_true", help="machine-readable JSON output")


def add_events_parser(subparsers: argparse._SubParsersAction,
                      parents: list[argparse.ArgumentParser] | None = None) -> None:
    """Add `events` with its subcommands `ls`, `show`, `tail` and `stats`.

    `parents` (e.g. the common --data-dir/--redis-url options) are added to every subcommand.
    """
    parents = parents or []
    ev = subparsers.add_parser("events", help="browse the event log (admin)",
                               description="Browse the event log zhiyi:events.")
    sub = ev.add_subparsers(dest="events_command", metavar="{ls,show,tail,stats}", required=True)
    ls = sub.add_parser("ls", parents=parents, help="list events", description="List events matching the filters.")
    _filters(ls)
    ls.add_argument("--limit", type=_limit, default=50, metavar="N", help="at most N events (default 50; 0 = all)")
    ls.add_argument("--reverse", action="store_true", help="newest first")
    show = sub.add_parser("show", parents=parents, help="show one event", description="Show one event whole.")
    show.add_argument("position", metavar="POSITION")
    show.add_argument("--json", action="store_true", help="machine-readable JSON output")
    tail = sub.add_parser("tail", parents=parents, help="follow new events",
                          description="Print events as they are appended, until Ctrl-C / SIGTERM.")
    _filters(tail)
    stats = sub.add_parser("stats", parents=parents, help="count events", description="Count events by type, namespace, agent.")
    _filters(stats)
    for p in (ls, show, tail, stats):
        p.set_defaults(events_parser=p)


def _position(text: str | None, option: str) -> str | None:
    if text is None:
        return None
    if not positions.is_valid(text):
        raise UsageError(f"argument {option}: invalid position {text!r} (expected MS-SEQ, e.g. 1700000000000-0)")
    return text


def _time(text: str | None, option: str, now: datetime) -> datetime | None:
    if text is None:
        return None
    try:
        return browse.parse_time(text, now=now)
    except ValueError as exc:
        raise UsageError(f"argument {option}: {exc}") from None


def build_filter(args: argparse.Namespace, *, now: datetime | None = None) -> browse.EventFilter:
    """The EventFilter described by parsed arguments. Raises UsageError for invalid values."""
    now = now or datetime.now(UTC)
    flt = browse.EventFilter(
        types=frozenset(getattr(args, "type", None) or ()), namespaces=frozenset(getattr(args, "ns", None) or ()),
        agents=frozenset(getattr(args, "agent", None) or ()),
        since=_time(getattr(args, "since", None), "--since", now),
        until=_time(getattr(args, "until", None), "--until", now),
        start=_position(getattr(args, "from_position", None), "--from"),
        end=_position(getattr(args, "to_position", None), "--to"))
    return flt


def _write(out: TextIO, text: str) -> None:
    if text:
        out.write(text + "\n")
    out.flush()


async def _tail(args: argparse.Namespace, store: EventStore, flt: browse.EventFilter, out: TextIO,
                stop: asyncio.Event | None, block_ms: int) -> int:
    own_signal = False
    if stop is None:
        stop = asyncio.Event()
        with suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
            own_signal = True
    after = (browse.position_before(flt.start) or positions.ZERO) if flt.start else None
    if not args.json:
        _write(out, format_table([], widths=TAIL_WIDTHS))
    try:
        async with aclosing(browse.follow(store, flt, after=after, stop=stop, block_ms=block_ms)) as events:
            async for ev in events:
                _write(out, format_jsonl([ev]) if args.json
                       else format_table([ev], widths=TAIL_WIDTHS, header=False))
    except (KeyboardInterrupt, asyncio.CancelledError):
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()  # Ctrl-C / cancellation ends `tail` normally
    finally:
        if own_signal:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGTERM)
    return 0


async def run_events_command(args: argparse.Namespace, store: EventStore, out: TextIO = sys.stdout, *,
                             err: TextIO | None = None, now: datetime | None = None,
                             stop: asyncio.Event | None = None, block_ms: int = 1000) -> int:
    """Run `zhiyi events ...`. Returns 0, 1 (unknown position in `show`) or 2 (invalid argument).

    `stop` ends `tail` when set (without it, `tail` installs its own SIGTERM handler)."""
    err = err if err is not None else sys.stderr
    cmd = getattr(args, "events_command", None)
    try:
        if cmd == "show":
            position = _position(args.position, "POSITION")
            assert position is not None
            ev = await store.get(position)
            if ev is None:
                err.write(f"zhiyi events show: no event at position {position}\n")
                return 1
            _write(out, format_event(ev))
            return 0
        if cmd not in ("ls", "tail", "stats"):
            raise UsageError(f"unknown events command {cmd!r} (choose from ls, show, tail, stats)")
        flt = build_filter(args, now=now)
        if cmd == "ls":
            events = await browse.list_events(store, flt, limit=args.limit or None, newest_first=args.reverse)
            _write(out, format_jsonl(events) if args.json else format_table(events))
        elif cmd == "stats":
            stats = await browse.count_stats(store, flt)
            _write(out, format_stats_json(stats) if args.json else format_stats(stats))
        else:
            return await _tail(args, store, flt, out, stop, block_ms)
        return 0
    except UsageError as exc:
        parser = getattr(args, "events_parser", None)
        if isinstance(parser, argparse.ArgumentParser):
            err.write(parser.format_usage())
            err.write(f"{parser.prog}: error: {exc}\n")
        else:
            err.write(f"zhiyi events: error: {exc}\n")
        return 2
