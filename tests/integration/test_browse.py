"""The event browser against a real Redis: scanning, follow, stats, rendering and the CLI."""

from __future__ import annotations

import argparse
import asyncio
import io
from dataclasses import dataclass
from datetime import UTC, datetime

import orjson
import pytest

from events import browse
from events.redis import keys
from events.browse import EventFilter, count_stats, follow, list_events
from events.catalogue import AgentRegistered, MemoryCommitted, MemoryDeleted, RecallServed, new_event
from events.codec import encode_fields
from events.envelope import Event
from events.redis.store import EventStore
from eventually import eventually
from gateway.cli import events as render
from gateway.cli.events import add_events_parser, run_events_command

ZH = ("用户喜欢简洁的中文回答，不要冗长的解释；代码注释也用中文写，变量名保持英文，提交信息用英文祈使句。"
      "如果需要示例，请给出最短的可运行代码片段，并说明边界情况。")


def dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


@dataclass
class Seeded:
    events: list[Event]        # as read back from the log, oldest first

    def pos(self, i: int) -> str:
        return self.events[i].position


async def _append(store: EventStore, payload: object, ns: str, agent: str) -> str:
    res = await store.append([new_event(payload, ns=ns, agent=agent)])
    await asyncio.sleep(0.003)  # distinct wall times, so time ranges can split the log
    return res.position


@pytest.fixture
async def seeded(store: EventStore) -> Seeded:
    await _append(store, AgentRegistered("hermes", "coder", "hermes-main", "hermes-ephemeral", "h" * 64),
                  "hermes-main", "hermes")                                                               # 0
    await _append(store, MemoryCommitted("m1", ZH, "hermes-main", "preference", "user_pref"), "hermes-main", "hermes")  # 1
    await _append(store, AgentRegistered("小明", "助手", "小明-main", "小明-ephemeral", "x" * 64), "小明-main", "小明")   # 2
    await _append(store, MemoryCommitted("m2", "Deploys go through nginx", "shared", "fact", "system_fact"),
                  "shared", "小明")                                                                      # 3
    await _append(store, RecallServed("中文偏好是什么", ("hermes-main", "shared"), ("m1", "m2"), (0.91, 0.42)),
                  "hermes-main", "hermes")                                                               # 4
    await _append(store, MemoryDeleted("m1", "hermes-main", 2, "用户更正"), "hermes-main", "hermes")      # 5
    await _append(store, MemoryCommitted("m3", "小明的项目使用 Python 3.11", "小明-main", "fact", "proj_context"),
                  "小明-main", "小明")                                                                   # 6
    events = await store.read()
    assert len(events) == 7
    return Seeded(events)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zhiyi")
    add_events_parser(p.add_subparsers(dest="command"))
    return p


async def cli(store: EventStore, *argv: str, **kw: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = await run_events_command(parser().parse_args(["events", *argv]), store, out=out, err=err, **kw)
    return rc, out.getvalue(), err.getvalue()


# --------------------------------------------------------------------------- list_events


async def test_list_all_oldest_first_and_reverse(store: EventStore, seeded: Seeded) -> None:
    got = await list_events(store, EventFilter())
    assert [e.position for e in got] == [e.position for e in seeded.events]
    rev = await list_events(store, EventFilter(), newest_first=True)
    assert [e.position for e in rev] == [e.position for e in reversed(seeded.events)]


@pytest.mark.parametrize("page", [None, 1, 2, 3])
async def test_filters_by_type_prefix_ns_agent(store: EventStore, seeded: Seeded, page: int | None) -> None:
    async def positions(flt: EventFilter, **kw: object) -> list[str]:
        return [e.position for e in await list_events(store, flt, page=page, **kw)]

    assert await positions(EventFilter(types={"memory.committed"})) == [seeded.pos(i) for i in (1, 3, 6)]
    assert await positions(EventFilter(types={"memory.*"})) == [seeded.pos(i) for i in (1, 3, 5, 6)]
    assert await positions(EventFilter(types={"memory.", "recall.served"})) == [seeded.pos(i) for i in (1, 3, 4, 5, 6)]
    assert await positions(EventFilter(namespaces={"hermes-main"})) == [seeded.pos(i) for i in (0, 1, 4, 5)]
    assert await positions(EventFilter(agents={"小明"})) == [seeded.pos(i) for i in (2, 3, 6)]
    assert await positions(EventFilter(agents={"小明"}, namespaces={"shared"})) == [seeded.pos(3)]
    assert await positions(EventFilter(types={"memory.*"}), limit=2) == [seeded.pos(1), seeded.pos(3)]
    assert await positions(EventFilter(types={"memory.*"}), limit=2, newest_first=True) == [seeded.pos(6), seeded.pos(5)]
    assert await positions(EventFilter(agents={"nobody"})) == []


@pytest.mark.parametrize("page", [None, 1, 2])
async def test_position_range_is_inclusive(store: EventStore, seeded: Seeded, page: int | None) -> None:
    flt = EventFilter(start=seeded.pos(2), end=seeded.pos(4))
    assert [e.position for e in await list_events(store, flt, page=page)] == [seeded.pos(i) for i in (2, 3, 4)]
    rev = await list_events(store, flt, newest_first=True, page=page)
    assert [e.position for e in rev] == [seeded.pos(i) for i in (4, 3, 2)]
    assert await list_events(store, EventFilter(start=seeded.pos(4), end=seeded.pos(2))) == []


async def test_time_range_uses_hlc(store: EventStore, seeded: Seeded) -> None:
    walls = [e.wall_ms for e in seeded.events]
    assert walls == sorted(walls) and walls[0] < walls[-1]
    since, until = walls[2], walls[4]
    expected = [e.position for e in seeded.events if since <= e.wall_ms <= until]
    assert seeded.pos(2) in expected and seeded.pos(4) in expected and seeded.pos(0) not in expected
    flt = EventFilter(since=dt(since), until=dt(until))
    assert [e.position for e in await list_events(store, flt, page=1)] == expected
    assert [e.position for e in await list_events(store, flt, newest_first=True)] == expected[::-1]


async def test_time_bounds_have_slack_for_hlc_vs_stream_id(store: EventStore, redis) -> None:
    # Entries whose stream-id time and HLC wall time differ (e.g. written by a skewed primary):
    # the id bounds are widened and `matches` decides on the HLC.
    ids_and_walls = [("1000-0", 31_000), ("40000-0", 35_000), ("50000-0", 45_000), ("200000-0", 46_000)]
    for sid, wall in ids_and_walls:
        fields = encode_fields(new_event(MemoryDeleted(sid, "ns", 2), ns="ns", agent="a"), "skewed")
        await redis.xadd(keys.STREAM, dict(zip(fields[::2], fields[1::2])) | {b"h": f"{wall}:0:skewed".encode()}, id=sid)
    flt = EventFilter(since=dt(30_000), until=dt(45_000))
    assert [e.position for e in await list_events(store, flt)] == ["1000-0", "40000-0", "50000-0"]
    assert (await count_stats(store, flt)).total == 3
    # the documented trade-off: 200000-0's HLC is in range, but its id lies beyond the slack
    flt = EventFilter(until=dt(46_000))
    assert flt.bounds()[1] == f"{46_000 + browse.SLACK_MS}-{browse.MAX_SEQ}"
    assert [e.position for e in await list_events(store, flt, newest_first=True)] == ["50000-0", "40000-0", "1000-0"]


# --------------------------------------------------------------------------- stats


async def test_count_stats(store: EventStore, seeded: Seeded) -> None:
    stats = await count_stats(store, EventFilter(), batch=2)
    assert stats.total == 7
    assert stats.by_type == {"agent.registered": 2, "memory.committed": 3, "memory.deleted": 1, "recall.served": 1}
    assert stats.by_ns == {"hermes-main": 4, "小明-main": 2, "shared": 1}
    assert stats.by_agent == {"hermes": 4, "小明": 3}
    assert (stats.first, stats.last) == (seeded.pos(0), seeded.pos(6))
    part = await count_stats(store, EventFilter(types={"memory.*"}, start=seeded.pos(3)), batch=1)
    assert (part.total, part.first, part.last) == (3, seeded.pos(3), seeded.pos(6))
    assert (await count_stats(store, EventFilter(start=seeded.pos(0), end=seeded.pos(0)))).total == 1
    empty = await count_stats(store, EventFilter(agents={"nobody"}))
    assert (empty.total, empty.first) == (0, None)
    doc = orjson.loads(render.format_stats_json(stats))
    assert doc["total"] == 7 and doc["by_agent"] == {"hermes": 4, "小明": 3}
    assert list(doc["by_type"])[0] == "memory.committed"      # most frequent first
    text = render.format_stats(stats)
    assert "events: 7" in text and "小明-main" in text


# --------------------------------------------------------------------------- rendering


async def test_table_aligns_chinese_columns(store: EventStore, seeded: Seeded) -> None:
    events = await list_events(store, EventFilter())
    lines = render.format_table(events).splitlines()
    assert lines[0].split() == ["POSITION", "TIME", "TYPE", "NS", "AGENT", "SUMMARY"]
    assert len(lines) == 8
    summary_cols, type_cols = set(), set()
    for line, e in zip(lines[1:], events):
        assert line.startswith(e.position)
        assert render.event_time(e) in line
        type_cols.add(render.display_width(line[:line.index(e.type)]))
        summary = render.summarize(e)
        summary_cols.add(render.display_width(line[:line.rindex(summary)]))
    summary_cols.add(render.display_width(lines[0][:lines[0].index("SUMMARY")]))
    assert len(type_cols) == 1 and len(summary_cols) == 1       # every column starts at one screen column
    row = lines[2]                                              # m1, Chinese content cut at 60 chars
    assert "m1 " + ZH[:60] + "…" in row
    assert 'query="中文偏好是什么" → 2 results' in lines[5]
    assert render.format_table([]) == "(no events)"


async def test_json_renderings(store: EventStore, seeded: Seeded) -> None:
    events = await list_events(store, EventFilter())
    rows = [orjson.loads(line) for line in render.format_jsonl(events).splitlines()]
    assert [r["position"] for r in rows] == [e.position for e in events]
    assert rows[1]["data"]["content"] == ZH and rows[1]["ns"] == "hermes-main"
    assert rows[4]["data"]["scores"] == [0.91, 0.42]
    pretty = render.format_event(events[1])
    assert ZH in pretty and "\\u" not in pretty and "\n  " in pretty    # non-ASCII kept, indented
    doc = orjson.loads(pretty)
    assert doc["time"] == render.event_time(events[1]) and doc["hlc"].endswith(":test-node")


# --------------------------------------------------------------------------- follow


async def _tailing(store: EventStore) -> bool:
    """A client of the test's own Redis is blocked in XREAD: a follower took its start position
    (it reads the end of the log before its first blocking read) and is waiting for new events."""
    return any(c.get("cmd") == "xread" and "b" in c.get("flags", "") for c in await store.redis.client_list())


async def test_follow_yields_events_appended_after_it_started(store: EventStore, seeded: Seeded) -> None:
    stop = asyncio.Event()
    got: list[Event] = []

    async def collect() -> None:
        async for e in follow(store, EventFilter(types={"memory.*"}), stop=stop, block_ms=50):
            got.append(e)

    task = asyncio.create_task(collect())
    await eventually(lambda: _tailing(store), what="follow blocked in XREAD (its start taken)")
    await _append(store, RecallServed("忽略", ("shared",), (), ()), "shared", "hermes")      # filtered out
    pos = await _append(store, MemoryCommitted("m9", "新的记忆", "shared", "fact", "system_fact"), "shared", "hermes")
    await eventually(lambda: got, timeout_s=2, interval_s=0.01, what="the event appended after follow started")
    stop.set()
    await asyncio.wait_for(task, timeout=2)      # notices `stop` within the block timeout
    assert [e.position for e in got] == [pos]    # nothing from before it started, nothing filtered out
    assert got[0].data.content == "新的记忆"


async def test_follow_from_a_position_and_until_end(store: EventStore, seeded: Seeded) -> None:
    flt = EventFilter(end=seeded.pos(4))
    got = [e.position async for e in follow(store, flt, after=seeded.pos(1), block_ms=50)]  # ends past `end`
    assert got == [seeded.pos(i) for i in (2, 3, 4)]


# --------------------------------------------------------------------------- CLI


async def test_cli_ls(store: EventStore, seeded: Seeded) -> None:
    rc, out, err = await cli(store, "ls", "--type", "memory.*", "--ns", "hermes-main", "--ns", "小明-main", "--json")
    assert (rc, err) == (0, "")
    assert [orjson.loads(line)["position"] for line in out.splitlines()] == [seeded.pos(i) for i in (1, 5, 6)]
    rc, out, _ = await cli(store, "ls", "--agent", "小明", "--reverse", "--limit", "2")
    lines = out.splitlines()
    assert rc == 0 and len(lines) == 3 and lines[1].startswith(seeded.pos(6)) and lines[2].startswith(seeded.pos(3))
    rc, out, _ = await cli(store, "ls", "--from", seeded.pos(2), "--to", seeded.pos(3), "--json")
    assert [orjson.loads(line)["position"] for line in out.splitlines()] == [seeded.pos(2), seeded.pos(3)]
    now = dt(seeded.events[6].wall_ms + 60_000)
    rc, out, _ = await cli(store, "ls", "--since", "2m", "--until", "30s", "--json", now=now)
    assert rc == 0 and len(out.splitlines()) == 7
    rc, out, _ = await cli(store, "ls", "--since", "2030-01-01T00:00:00Z")
    assert (rc, out.strip()) == (0, "(no events)")
    rc, out, _ = await cli(store, "ls", "--limit", "0", "--json")
    assert len(out.splitlines()) == 7


async def test_cli_show(store: EventStore, seeded: Seeded) -> None:
    rc, out, err = await cli(store, "show", seeded.pos(1))
    assert (rc, err) == (0, "") and ZH in out
    rc, out, _ = await cli(store, "show", seeded.pos(4), "--json")
    doc = orjson.loads(out)
    assert doc["type"] == "recall.served" and doc["data"]["query"] == "中文偏好是什么"
    rc, out, err = await cli(store, "show", "1-0")
    assert (rc, out) == (1, "") and "no event at position 1-0" in err


async def test_cli_stats(store: EventStore, seeded: Seeded) -> None:
    rc, out, _ = await cli(store, "stats", "--json")
    assert rc == 0 and orjson.loads(out)["by_type"]["memory.committed"] == 3
    rc, out, _ = await cli(store, "stats", "--agent", "小明")
    assert rc == 0 and "events: 3" in out and "hermes" not in out


@pytest.mark.parametrize("argv, message", [
    (["show", "abc"], "argument POSITION: invalid position 'abc'"),
    (["ls", "--from", "12"], "argument --from: invalid position '12'"),
    (["tail", "--to", "x-1"], "argument --to: invalid position 'x-1'"),
    (["ls", "--since", "yesterday"], "argument --since: invalid time 'yesterday'"),
    (["stats", "--until", "2026-13-01"], "argument --until: invalid time"),
])
async def test_cli_invalid_arguments_exit_2(store: EventStore, argv: list[str], message: str) -> None:
    rc, out, err = await cli(store, *argv)
    assert (rc, out) == (2, "")
    assert err.startswith("usage: zhiyi events ") and f"error: {message}" in err


def test_cli_parser_rejects_bad_limit_and_missing_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["events", "ls", "--limit", "-1"], ["events"], ["events", "show"]):
        with pytest.raises(SystemExit) as exc:
            parser().parse_args(argv)
        assert exc.value.code == 2
    assert "error" in capsys.readouterr().err


async def _wait_for(buf: io.StringIO, text: str) -> None:
    await eventually(lambda: text in buf.getvalue(), timeout_s=3, interval_s=0.01,
                     what=f"{text!r} in the tail's output")


async def test_cli_tail_until_stopped(store: EventStore, seeded: Seeded) -> None:
    out, err, stop = io.StringIO(), io.StringIO(), asyncio.Event()
    args = parser().parse_args(["events", "tail", "--agent", "小明", "--json"])
    task = asyncio.create_task(run_events_command(args, store, out=out, err=err, stop=stop, block_ms=50))
    await eventually(lambda: _tailing(store), what="tail blocked in XREAD (its start taken)")
    await _append(store, MemoryDeleted("m1", "hermes-main", 3), "hermes-main", "hermes")
    pos = await _append(store, MemoryCommitted("m8", "小明说：你好", "小明-main", "fact", "system_fact"), "小明-main", "小明")
    await _wait_for(out, pos)
    stop.set()
    assert await asyncio.wait_for(task, timeout=2) == 0
    assert [orjson.loads(line)["position"] for line in out.getvalue().splitlines()] == [pos]


async def test_cli_tail_from_position_table_and_cancel(store: EventStore, seeded: Seeded) -> None:
    out = io.StringIO()
    args = parser().parse_args(["events", "tail", "--from", seeded.pos(5)])
    task = asyncio.create_task(run_events_command(args, store, out=out, err=io.StringIO(), block_ms=50))
    await _wait_for(out, seeded.pos(6))
    lines = out.getvalue().splitlines()
    assert lines[0].split()[:3] == ["POSITION", "TIME", "TYPE"]
    assert lines[1].startswith(seeded.pos(5)) and lines[2].startswith(seeded.pos(6))
    assert lines[0].index("TYPE") == lines[1].index("memory.deleted")
    task.cancel()                                # what Ctrl-C does under asyncio.run
    assert await asyncio.wait_for(task, timeout=2) == 0
