"""The eight triggers through the HTTP API and the injected clock (seed 6.4): each fires on its
condition and not within its cooldown, a paused one does not fire, `GET /api/v1/triggers` lists them
by urgency, and every firing is a `trigger.fired` event."""

from __future__ import annotations

import pytest
from eventually import eventually

from events.redis.leases import lease
from gateway.http.appkeys import STORE, TRIGGERS
from tests.e2e.conftest import ADMIN_KEY, assert_error
from tests.e2e.test_feedback import _commit

H = 3_600_000


async def _run(api) -> dict[str, dict]:
    await api.settle()
    status, body = await api.call("POST", "/api/v1/admin/triggers/run", json={})
    assert status == 200, body
    return {f["name"]: f for f in body["fired"]}


async def _triggers(api) -> dict[str, dict]:
    await api.settle()
    status, body = await api.call("GET", "/api/v1/triggers")
    assert status == 200, body
    urgencies = [t["urgency"] for t in body["triggers"]]
    assert urgencies == sorted(urgencies, reverse=True)
    return {t["name"]: t for t in body["triggers"]}


async def test_the_list_names_all_eight_with_their_state(api):
    key = await api.register("alice")
    triggers = await _triggers(api)
    assert set(triggers) == {"distill", "merge", "prune", "decay", "backtrace", "conflict", "gap", "consolidation"}
    for t in triggers.values():
        assert {"name", "condition", "cooldown_s", "urgency", "last_fired_at", "paused", "failures"} <= set(t)
        assert t["last_fired_at"] is None and t["paused"] is False and t["failures"] == 0
    assert triggers["gap"]["disabled"] is None and triggers["gap"]["cooldown_s"] == 1800
    assert "LLM_ENDPOINT" in triggers["backtrace"]["disabled"] and "LLM_ENDPOINT" in triggers["distill"]["disabled"]
    assert "ZHIYI_MERGE" in triggers["merge"]["disabled"]
    assert triggers["conflict"]["disabled"] is None and triggers["conflict"]["cooldown_s"] == 60
    assert triggers["consolidation"]["condition"].endswith("or 48 h since it")
    status, body = await api.call("GET", "/api/v1/triggers", key)
    assert status == 403
    assert_error(body, "admin_required")
    assert await _run(api) == {}            # nothing is due on a fresh log


async def test_time_triggers_fire_on_their_condition_and_not_within_their_cooldown(api):
    key = await api.register("alice")
    await _commit(api, key, "The NAS backs up every night at 02:00")
    assert set(await _run(api)) == {"conflict"}                 # a write naming an entity: swept at once
    api.clock.advance(ms=6 * H + 60_000)
    fired = await _run(api)
    assert set(fired) == {"decay"} and fired["decay"]["status"] == "fired"
    assert fired["decay"]["result"] == {"deprecated": 0, "downweighted": 0, "forgotten": 0}
    assert await _run(api) == {}                                # within decay's 6 h cooldown
    triggers = await _triggers(api)
    assert triggers["decay"]["last_fired_at"] and triggers["decay"]["cooling_until"]
    assert not triggers["decay"]["due"] and triggers["prune"]["urgency"] > 0.25
    api.clock.advance(ms=18 * H)                                # 24 h since the log began
    fired = await _run(api)
    assert set(fired) == {"decay", "prune"}
    api.clock.advance(ms=24 * H)                                # 48 h: deep consolidation
    fired = await _run(api)
    assert set(fired) == {"decay", "prune", "consolidation"}
    assert fired["consolidation"]["result"]["steps"]["clusters"] == "ok"
    status, state = await api.call("GET", "/api/v1/consolidation", params={"after": fired["consolidation"]["position"]})
    assert state["runs"][0]["trigger"] == "consolidation"
    api.clock.advance(ms=23 * H)                                # within its 24 h cooldown (and 23 h < 48 h)
    assert set(await _run(api)) == {"decay"}
    assert await api.count_events("trigger.fired") == 8


async def test_a_paused_trigger_does_not_fire_until_resumed(api):
    status, body = await api.call("POST", "/api/v1/admin/triggers/decay/pause", json={"reason": "maintenance"})
    assert status == 200 and body["paused"] is True and body["changed"] is True
    status, again = await api.call("POST", "/api/v1/admin/triggers/decay/pause", json={})
    assert status == 200 and again["changed"] is False and again["position"] == ""
    api.clock.advance(ms=7 * H)
    assert "decay" not in await _run(api)
    triggers = await _triggers(api)
    assert triggers["decay"]["paused"] is True and triggers["decay"]["paused_reason"] == "maintenance"
    assert triggers["decay"]["holds"] is True and triggers["decay"]["due"] is False
    status, body = await api.call("POST", "/api/v1/admin/triggers/decay/resume")
    assert status == 200 and body["paused"] is False and body["changed"] is True
    assert "decay" in await _run(api)


async def test_the_conflict_sweep_finds_what_the_commit_check_could_not_see(api):
    """Two memories committed in one batch are not compared with each other at the door; the
    `conflict` trigger's sweep finds their contradiction."""
    key = await api.register("alice")
    await _commit(api, key, "The NAS backs up every night at 02:00")
    status, body = await api.call("POST", "/api/v1/batch-commit", key, json={"entries": [
        {"content": "The staging database is Postgres 14", "source": "user_verbal"},
        {"content": "Staging runs Postgres 16 for its database", "source": "config_parse"}]})
    assert status == 201, body
    assert [r["conflicts"] for r in body["results"]] == [[], []]
    triggers = await _triggers(api)
    assert triggers["conflict"]["holds"] and triggers["conflict"]["urgency"] > 0
    fired = await _run(api)
    assert fired["conflict"]["result"]["appended"] == 1, fired
    status, listed = await api.call("GET", "/api/v1/conflicts", key, params={"after": fired["conflict"]["position"]})
    assert {tuple(sorted(c["memory_ids"])) for c in listed["conflicts"]} == {
        tuple(sorted(r["memory_id"] for r in body["results"]))}
    await _commit(api, key, "Staging runs Postgres 15 now, says the DBA", source="user_chat")
    assert "conflict" not in await _run(api)                     # within its 1-minute cooldown
    api.clock.advance(ms=61_000)
    fired = await _run(api)
    assert fired["conflict"]["result"]["examined"] == 1          # only the new commit: the mark moved
    api.clock.advance(ms=61_000)
    assert "conflict" not in await _run(api)                     # nothing written since


@pytest.mark.parametrize("settings_overrides", [{"merge": True}])
async def test_the_merge_sweep_runs_on_new_memories_when_merging_is_on(api):
    key = await api.register("alice")
    await _commit(api, key, "Grafana listens on port 3000")
    triggers = await _triggers(api)
    assert triggers["merge"]["disabled"] is None and triggers["merge"]["holds"]
    fired = await _run(api)
    assert fired["merge"]["result"]["examined"] == 1
    assert "merge" not in await _run(api)                        # 10-minute cooldown
    api.clock.advance(ms=11 * 60_000)
    assert "merge" not in await _run(api)                        # nothing new since the sweep


async def test_trigger_endpoints_validate_and_write_nothing_on_bad_input(api):
    key = await api.register("alice")
    before = await api.log_length()
    status, body = await api.call("POST", "/api/v1/admin/triggers/dreaming/pause", json={})
    assert status == 404
    assert_error(body, "not_found")
    status, body = await api.call("POST", "/api/v1/admin/triggers/decay/pause", json={"reason": 7})
    assert status == 400
    assert_error(body)
    status, body = await api.call("POST", "/api/v1/admin/triggers/decay/pause", json={"why": "x"})
    assert status == 400
    assert_error(body, "unknown_field")
    status, body = await api.call("POST", "/api/v1/admin/triggers/decay/pause", json={"reason": "x" * 501})
    assert status == 400
    status, body = await api.call("POST", "/api/v1/admin/triggers/decay/resume", key, json={})
    assert status == 403
    status, body = await api.call("POST", "/api/v1/admin/triggers/run", key, json={})
    assert status == 403
    status, body = await api.call("GET", "/api/v1/triggers", ADMIN_KEY, params={"sort": "name"})
    assert status == 400
    assert_error(body, "unknown_field")
    assert await api.log_length() == before


async def test_the_service_is_the_one_the_app_runs(api):
    assert api.client.app[TRIGGERS].actions.keys() == {"prune", "decay", "consolidation", "conflict", "gap"}


async def test_one_instance_fires_at_a_time(api):
    """Another gateway holding the triggers' lease: this one fires nothing this round."""
    await api.register("alice")                                    # the log begins
    api.clock.advance(ms=7 * H)
    async with lease(api.client.app[STORE].redis, "triggers", 60_000) as held:
        assert held
        assert await _run(api) == {}
        async with lease(api.client.app[STORE].redis, "triggers", 60_000) as second:
            assert second is False
    assert "decay" in await _run(api)                              # released: the next round fires


@pytest.mark.parametrize("settings_overrides", [{"tick_interval_s": 0.2}])
async def test_the_app_evaluates_the_triggers_on_its_own(api):
    """`ZHIYI_TICK_INTERVAL_S`: the running app fires due triggers without being asked."""
    await api.register("alice")
    api.clock.advance(ms=7 * H)

    async def fired() -> bool:
        return await api.count_events("trigger.fired") >= 1

    await eventually(fired, timeout_s=10)
    triggers = await _triggers(api)
    assert triggers["decay"]["fired"] == 1 and triggers["decay"]["last_fired_at"]
