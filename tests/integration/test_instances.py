"""Instances in a real Redis (`events.redis.instances`): a claim is refused while another live process
holds the same (instance id, role) and granted once it released or expired; a heartbeat that expires
lists the instance down; records not seen for 7 days are dropped."""

from __future__ import annotations

import asyncio

from events.redis import keys
from events.redis.instances import DROP_AFTER_MS, Instances

NOW = 1_900_000_000_000


async def test_one_live_process_per_instance_and_role(redis) -> None:
    first, second = Instances(redis), Instances(redis)
    assert await first.claim("node-1", "gateway", "gateway") is None
    assert await first.claim("node-1", "gateway") is None                    # its own claim again
    holder = await second.claim("node-1", "gateway")
    assert holder is not None and holder["token"] == first.token and holder["info"] == "gateway"
    assert await second.claim("node-1", "projector") is None                 # another role
    await second.release("node-1", "gateway")                                # not its key: nothing happens
    assert await second.claim("node-1", "gateway") is not None
    await first.release("node-1", "gateway")
    assert await second.claim("node-1", "gateway") is None


async def test_an_expired_heartbeat_lists_the_instance_down_and_old_ones_are_dropped(redis) -> None:
    a, b = Instances(redis), Instances(redis)
    await a.beat("node-a", "gateway", {"position": "1-0", "version": "0.1.0"}, now_ms=NOW)
    await b.beat("node-b", "projector", {"position": None}, now_ms=NOW - DROP_AFTER_MS + 1000)
    listed = {r["instance_id"]: r for r in await a.records(NOW)}
    assert {k: v["status"] for k, v in listed.items()} == {"node-a": "up", "node-b": "up"}
    assert listed["node-a"]["position"] == "1-0" and listed["node-a"]["last_seen_ms"] == NOW
    await redis.pexpire(keys.heartbeat("node-a", "gateway"), 50)             # a killed process stops beating
    await asyncio.sleep(0.2)
    listed = {r["instance_id"]: r["status"] for r in await a.records(NOW)}
    assert listed == {"node-a": "down", "node-b": "up"}
    assert [r["instance_id"] for r in await a.records(NOW + 2000)] == ["node-a"]   # node-b unseen for 7 days
    assert await redis.hlen(keys.INSTANCES) == 1


async def test_lag_counts_the_entries_after_a_position(store) -> None:
    from events.catalogue import AgentRegistered, new_event

    instances = Instances(store.redis)
    results = [await store.append([new_event(AgentRegistered(f"agent-{i}", "test", f"agent-{i}-main", f"agent-{i}-ephemeral", f"h{i}"), ns="shared",
                                             agent="admin")]) for i in range(5)]
    assert await instances.lag_events(results[1].position) == 3
    assert await instances.lag_events(results[1].position, cap=2) == 2
    assert await instances.lag_events(None) == 5


async def test_a_start_waits_one_beat_then_refuses_a_live_twin_or_takes_over_a_dead_ones_id(redis) -> None:
    import pytest

    from gateway.process.instance_beat import InstanceTaken, beat_until, claim

    live, dead, newcomer = Instances(redis), Instances(redis), Instances(redis)
    stop = asyncio.Event()
    record = _record
    beating = asyncio.create_task(beat_until(stop, live, "node-live", "gateway", record, every_s=0.3))
    try:
        await asyncio.sleep(0.1)
        with pytest.raises(InstanceTaken, match="another live gateway process holds instance id 'node-live'"):
            await claim(newcomer, "node-live", "gateway", every_s=0.3)
    finally:
        stop.set()
        await beating
    assert await redis.exists(keys.heartbeat("node-live", "gateway")) == 0   # released on a clean stop
    # a killed process: its key stays (not refreshed) until it expires; a restart takes it over after one beat
    assert await dead.claim("node-dead", "gateway") is None
    await claim(newcomer, "node-dead", "gateway", every_s=0.3)
    held = await newcomer.heartbeat("node-dead", "gateway")
    assert held is not None and held["token"] == newcomer.token


async def _record() -> dict:
    return {"position": None}
