"""The CLI against a live app: digest, replay (--until, --verify) and the event browser."""

from __future__ import annotations

import asyncio
import contextlib
import io

import orjson

from gateway.cli.main import main
from tests.e2e.test_feedback import _vote


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
    assert [p["projection"] for p in orjson.loads(out)["projections"]] == [
        "memories", "synonyms", "activity", "tombstones", "graph", "episodes", "conflicts", "consolidation", "metrics",
        "learning"]
    live = orjson.loads(out)["projections"][0]
    assert live["projection"] == "memories" and live["position"] == gone["position"]

    rc, out = await _cli("replay", *common, "--into", str(tmp_path / "full"), "--json")
    assert rc == 0
    full = orjson.loads(out)["projections"]
    assert full[0]["digest"] == live["digest"]

    # on two cores: graph folded by a second process, to the same digests
    rc, out = await _cli("replay", *common, "--into", str(tmp_path / "two"), "--processes", "2", "--json")
    assert rc == 0 and orjson.loads(out)["projections"] == full

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


async def test_tick_and_replay_verify_with_every_learning_event(api, redis_url, tmp_path):
    """`zhiyi tick` runs the scheduler in-process; `zhiyi replay --verify` matches live after feedback,
    notices, validations, corrections, deprecations, down-weights and forgetting."""
    key = await api.register("alice")
    common = ["--data-dir", str(tmp_path / "data"), "--redis-url", redis_url]
    _, a = await api.commit(key, "Grafana listens on port 3000 on the ops box", source="config_parse")
    _, b = await api.commit(key, "Grafana on the ops box uses port 3000")          # validates a (P1)
    _, c = await api.commit(key, "the nightly export job writes to /srv/export", decay_class="code_snippet")
    await _vote(api, b["memory_id"], useful=1, not_useful=4)           # five agents, quality 0.2: notice
    await api.call("POST", "/api/v1/feedback/correct", key, json={
        "memory_id": c["memory_id"], "content": "the nightly export job writes to /srv/exports", "reason": "typo"})
    await api.call("POST", "/api/v1/feedback/deprecate", key, json={"memory_id": a["memory_id"], "reason": "old"})
    await api.settle()   # the quality notice is a reaction
    api.clock.advance(days=200)
    status, report = await api.call("POST", "/api/v1/admin/tick", json={})     # deadline, stale rule, forget
    assert status == 200 and report["deprecated"] and report["downweighted"] and report["forgotten"], report
    await api.settle()
    rc, out = await _cli("tick", *common, "--dry-run", "--json")
    assert rc == 0 and orjson.loads(out)["dry_run"] is True
    rc, out = await _cli("tick", *common, "--json")
    assert rc == 0 and orjson.loads(out)["forgotten"] == []      # the HTTP tick already did everything due
    rc, out = await _cli("replay", *common, "--into", str(tmp_path / "verify"), "--verify")
    assert rc == 0 and "verify: OK" in out, out
    rc, out = await _cli("events", "ls", *common, "--json", "--limit", "1000")
    seen = {orjson.loads(line)["type"] for line in out.splitlines()}
    assert {"memory.validated", "memory.quality_dropped", "memory.corrected", "memory.deprecated",
            "memory.downweighted", "memory.forgotten", "memory.feedback"} <= seen, seen


async def test_triggers_and_consolidate_commands(api, redis_url, tmp_path):
    """`zhiyi triggers` lists the eight triggers; `zhiyi consolidate` runs deep consolidation in-process."""
    key = await api.register("alice")
    common = ["--data-dir", str(tmp_path / "data"), "--redis-url", redis_url]
    await api.commit(key, "The NAS backs up every night at 02:00")
    await api.settle()
    rc, out = await _cli("triggers", *common, "--json")
    triggers = {t["name"]: t for t in orjson.loads(out)["triggers"]}
    assert rc == 0 and len(triggers) == 8 and triggers["backtrace"]["disabled"] and not triggers["gap"]["disabled"]
    rc, out = await _cli("triggers", *common)
    assert rc == 0 and "consolidation" in out and "disabled: needs an LLM" in out, out
    rc, out = await _cli("consolidate", *common, "--json")
    run = orjson.loads(out)
    assert rc == 0 and run["trigger"] == "manual" and run["report"]["memories"] == 1
    status, state = await api.call("GET", "/api/v1/consolidation", params={"after": run["position"]})
    assert status == 200 and state["runs"][0]["run_id"] == run["run_id"]
    rc, out = await _cli("consolidate", *common)
    assert rc == 0 and out.startswith("consolidation cr-") and "backtrace   not_run" in out, out
