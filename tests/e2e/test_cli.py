"""The CLI against a live app: digest, replay (--until, --verify) and the event browser."""

from __future__ import annotations

import asyncio
import contextlib
import io

import orjson

from gateway.cli import main


async def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(out):
            return main(list(argv))

    rc = await asyncio.to_thread(run)
    return rc, out.getvalue()


async def test_digest_replay_verify_and_time_travel(api, redis_url, tmp_path):
    key = await api.register("alice")
    _, first = await api.commit(key, "first memory about nginx")
    _, second = await api.commit(key, "第二条记忆：备份在凌晨三点")
    _, gone = await api.call("DELETE", f"/api/v1/distilled/{first['memory_id']}", key)
    status, _ = await api.call("GET", "/api/v1/stats", params={"after": gone["position"]})
    assert status == 200
    common = ["--data-dir", str(tmp_path / "data"), "--redis-url", redis_url]

    rc, out = await _cli("digest", *common, "--json")
    assert rc == 0
    live = orjson.loads(out)["projections"][0]
    assert live["projection"] == "memories" and live["position"] == gone["position"]

    rc, out = await _cli("replay", *common, "--into", str(tmp_path / "full"), "--json")
    assert rc == 0
    assert orjson.loads(out)["projections"][0]["digest"] == live["digest"]

    rc, out = await _cli("replay", *common, "--into", str(tmp_path / "past"), "--until", second["position"], "--json")
    past = orjson.loads(out)["projections"][0]
    assert rc == 0 and past["position"] == second["position"] and past["digest"] != live["digest"]

    rc, out = await _cli("replay", *common, "--into", str(tmp_path / "verify"), "--verify")
    assert rc == 0 and "verify: OK" in out

    rc, out = await _cli("replay", *common, "--into", str(tmp_path / "full"))
    assert rc != 0  # refuses a non-empty target


async def test_event_browser_commands(api, redis_url, tmp_path):
    key = await api.register("alice")
    _, c = await api.commit(key, "浏览器里的中文记忆", namespace="shared")
    common = ["--data-dir", str(tmp_path / "data"), "--redis-url", redis_url]
    rc, out = await _cli("events", "ls", *common, "--json")
    rows = [orjson.loads(line) for line in out.splitlines()]
    assert rc == 0 and [r["type"] for r in rows] == ["agent.registered", "memory.committed"]
    rc, out = await _cli("events", "ls", *common, "--type", "memory.*", "--ns", "shared")
    assert rc == 0 and "浏览器里的中文记忆"[:5] in out and "agent.registered" not in out
    rc, out = await _cli("events", "show", c["position"], *common, "--json")
    assert rc == 0 and orjson.loads(out)["data"]["content"] == "浏览器里的中文记忆"
    rc, out = await _cli("events", "stats", *common, "--json")
    assert rc == 0 and orjson.loads(out)["total"] == 2
    rc, _ = await _cli("events", "show", "1-0", *common)
    assert rc == 1
