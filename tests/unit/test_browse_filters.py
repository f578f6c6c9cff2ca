"""Pure logic of the event browser: time parsing, filters, stream bounds, text widths."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from events import browse
from events.browse import EventFilter, parse_time
from events.catalogue import EpisodeCommitted, EpisodeDistilled, MemoryCommitted, MemoryDeleted, RecallServed
from events.envelope import Event
from gateway.cli import events as render

NOW = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)


def ev(type_: str = "memory.committed", *, ns: str = "hermes-main", agent: str = "hermes",
       position: str = "1700000000000-0", wall_ms: int | None = NOW_MS, data: object | None = None) -> Event:
    if data is None:
        data = MemoryCommitted("m1", "用户喜欢简洁的回答", ns, "preference", "user_pref")
    return Event(type=type_, data=data, ns=ns, agent=agent, position=position,
                 hlc=f"{wall_ms}:0:node" if wall_ms is not None else "")


# --------------------------------------------------------------------------- parse_time


@pytest.mark.parametrize("text, expected", [
    ("2026-12-02", datetime(2026, 12, 2, tzinfo=UTC)),
    ("2026-12-02T10:00:00Z", datetime(2026, 12, 2, 10, tzinfo=UTC)),
    ("2026-12-02T10:00:00", datetime(2026, 12, 2, 10, tzinfo=UTC)),          # naive = UTC
    ("2026-12-02T18:00:00+08:00", datetime(2026, 12, 2, 10, tzinfo=UTC)),    # offsets converted
    ("2026-12-02T10:00:00.250Z", datetime(2026, 12, 2, 10, 0, 0, 250000, tzinfo=UTC)),
])
def test_parse_time_iso(text: str, expected: datetime) -> None:
    got = parse_time(text, now=NOW)
    assert got == expected
    assert got.tzinfo is not None and got.utcoffset() == timedelta(0)


@pytest.mark.parametrize("text, delta", [
    ("30s", timedelta(seconds=30)), ("15m", timedelta(minutes=15)), ("2h", timedelta(hours=2)),
    ("7d", timedelta(days=7)), ("1w", timedelta(weeks=1)), (" 2H ", timedelta(hours=2)), ("now", timedelta(0)),
])
def test_parse_time_relative_uses_injected_now(text: str, delta: timedelta) -> None:
    assert parse_time(text, now=NOW) == NOW - delta


def test_parse_time_relative_with_non_utc_now() -> None:
    now = NOW.astimezone(timezone(timedelta(hours=8)))
    assert parse_time("1h", now=now) == NOW - timedelta(hours=1)


@pytest.mark.parametrize("text", ["", "yesterday", "15x", "-5m", "2026-13-40", "12:00 tomorrow"])
def test_parse_time_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError, match="invalid time"):
        parse_time(text, now=NOW)


# --------------------------------------------------------------------------- EventFilter.matches


def test_empty_filter_matches_everything() -> None:
    assert EventFilter().matches(ev())
    assert EventFilter().matches(ev("some.future_type", ns="", agent=""))


@pytest.mark.parametrize("types, type_, ok", [
    ({"memory.committed"}, "memory.committed", True),
    ({"memory.committed"}, "memory.deleted", False),
    ({"memory."}, "memory.deleted", True),
    ({"memory.*"}, "memory.committed", True),
    ({"memory.*"}, "recall.served", False),
    ({"memory.*"}, "memoryless.thing", False),          # a prefix ends at the dot
    ({"memory"}, "memory.committed", False),            # no dot, no star: exact name only
    ({"*"}, "recall.served", True),
    ({"agent.registered", "recall.*"}, "recall.served", True),
    ({"agent.registered", "recall.*"}, "memory.deleted", False),
])
def test_types_exact_and_prefix(types: set[str], type_: str, ok: bool) -> None:
    assert EventFilter(types=types).matches(ev(type_)) is ok


def test_namespaces_and_agents_are_exact_sets() -> None:
    flt = EventFilter(namespaces={"hermes-main", "shared"}, agents={"hermes"})
    assert flt.matches(ev(ns="shared"))
    assert not flt.matches(ev(ns="hermes-ephemeral"))
    assert not flt.matches(ev(agent="athena"))
    assert EventFilter(agents=["小明"]).matches(ev(agent="小明"))       # any iterable is accepted
    assert isinstance(EventFilter(agents=["a"]).agents, frozenset)


def test_position_range_is_inclusive_and_numeric() -> None:
    flt = EventFilter(start="9-0", end="100-0")
    # as strings "10-0" < "9-0" and "100-0" < "9-0": numeric comparison must win
    assert flt.matches(ev(position="9-0"))
    assert flt.matches(ev(position="10-0"))
    assert flt.matches(ev(position="100-0"))
    assert not flt.matches(ev(position="8-5"))
    assert not flt.matches(ev(position="100-1"))
    assert not flt.matches(ev(position="1000-0"))
    assert EventFilter(start="5-2").matches(ev(position="5-10"))      # seq compared as an integer too
    assert not EventFilter(end="5-2").matches(ev(position="5-10"))


def test_invalid_positions_are_rejected() -> None:
    for bad in ("abc", "12", "1-2-3", "-1-0", "1.5-0"):
        with pytest.raises(ValueError, match="not a stream position"):
            EventFilter(start=bad)
    assert EventFilter(start="", end=None).start is None


def test_time_range_uses_hlc_wall_time_inclusive() -> None:
    since, until = NOW - timedelta(minutes=10), NOW
    flt = EventFilter(since=since, until=until)
    assert flt.matches(ev(wall_ms=NOW_MS))
    assert flt.matches(ev(wall_ms=NOW_MS - 600_000))
    assert not flt.matches(ev(wall_ms=NOW_MS - 600_001))
    assert not flt.matches(ev(wall_ms=NOW_MS + 1))
    # the HLC decides, not the stream id: this id is far outside the range
    assert flt.matches(ev(position="5-0", wall_ms=NOW_MS - 1))


def test_time_range_falls_back_to_the_position_without_hlc() -> None:
    flt = EventFilter(since=NOW)
    assert flt.matches(ev(position=f"{NOW_MS}-3", wall_ms=None))
    assert not flt.matches(ev(position=f"{NOW_MS - 1}-3", wall_ms=None))


def test_all_criteria_combine_with_and() -> None:
    flt = EventFilter(types={"memory.*"}, namespaces={"hermes-main"}, agents={"hermes"},
                      start="1-0", since=NOW - timedelta(hours=1))
    assert flt.matches(ev(position="2-0"))
    assert not flt.matches(ev("recall.served", position="2-0"))
    assert not flt.matches(ev(position="0-9"))
    assert not flt.matches(ev(position="2-0", wall_ms=NOW_MS - 3_600_001))


# --------------------------------------------------------------------------- bounds and positions


def test_bounds_from_positions_and_times() -> None:
    assert EventFilter().bounds() == (None, None)
    assert EventFilter(start="3-1", end="9-0").bounds() == ("3-1", "9-0")
    since, until = NOW - timedelta(hours=1), NOW
    lo, hi = EventFilter(since=since, until=until).bounds(slack_ms=1000)
    assert lo == f"{NOW_MS - 3_600_000 - 1000}-0"
    assert hi == f"{NOW_MS + 1000}-{browse.MAX_SEQ}"
    # the tighter of the position and time bound wins, compared numerically
    lo, hi = EventFilter(start=f"{NOW_MS}-0", since=since, end="10-0", until=until).bounds()
    assert (lo, hi) == (f"{NOW_MS}-0", "10-0")


def test_position_before() -> None:
    assert browse.position_before("10-3") == "10-2"
    assert browse.position_before("10-0") == f"9-{browse.MAX_SEQ}"
    assert browse.position_before("0-0") is None


# --------------------------------------------------------------------------- text


def test_display_width_pad_truncate() -> None:
    assert render.display_width("abc") == 3
    assert render.display_width("中文") == 4
    assert render.display_width("ｈｉ") == 4                    # fullwidth forms
    assert render.display_width("e\u0301") == 1                # combining accent takes no column
    assert render.display_width(render.pad("中a", 6)) == 6
    cut = render.truncate("用户喜欢简洁的回答", 7)
    assert cut.endswith("…") and render.display_width(cut) <= 7
    assert render.truncate("short", 10) == "short"


def test_summaries() -> None:
    long = "记" * 80
    s = render.summarize(ev(data=MemoryCommitted("m-42", f"{long}\nsecond line", "ns", "fact", "system_fact")))
    assert s.startswith("m-42 " + "记" * 60) and s.endswith("…")
    assert render.summarize(ev("memory.deleted", data=MemoryDeleted("m-42", "ns", 2, "过时"))) == 'm-42 v2 reason="过时"'
    r = render.summarize(ev("recall.served", data=RecallServed("中文偏好", ("ns",), ("m1", "m2"), (0.9, 0.8))))
    assert r == 'query="中文偏好" → 2 results'
    turns = ({"role": "user", "content": "我的端口是 8189"}, {"role": "assistant", "content": "好"})
    assert render.summarize(ev("episode.committed", data=EpisodeCommitted("chat-1", "ns", "conversation", "ok", turns))) \
        == "chat-1 conversation/ok 2 turns"
    assert render.summarize(ev("episode.distilled", data=EpisodeDistilled("chat-1", "ns", "skipped", (), "",
                                                                          "chit_chat"))) == \
        "chat-1 skipped → 0 memories reason=chit_chat"


def test_to_ms_is_exact() -> None:
    base = int(datetime(2026, 12, 2, 10, tzinfo=UTC).timestamp()) * 1000
    for ms in range(base, base + 2000, 7):
        assert browse.to_ms(datetime.fromtimestamp(ms / 1000, tz=UTC)) == ms
    assert browse.to_ms(datetime(2026, 12, 2, 10, 0, 0, 999_999)) == base + 999     # naive = UTC, floored
