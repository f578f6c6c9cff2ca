from __future__ import annotations

import asyncio

import pytest

from events import positions
from events.redis import keys
from events.catalogue import AgentRegistered, MemoryCommitted, MemoryDeleted, new_event
from events.errors import GuardFailed, IdempotencyConflict, LogResetError
from events.redis.indexes import Guard
from events.redis.store import EventStore, Idempotency


def committed(mid: str, content: str = "x", ns: str = "a-main"):
    return new_event(MemoryCommitted(mid, content, ns, "fact", "system_fact"), ns=ns, agent="a")


async def test_append_assigns_increasing_positions_and_hlc(store):
    res = await store.append([committed("m1"), committed("m2"), committed("m3")])
    assert len(res.positions) == 3
    keys_ = [positions.key(p) for p in res.positions]
    assert keys_ == sorted(keys_) and len(set(keys_)) == 3
    evs = await store.read()
    hlcs = [(int(e.hlc.split(":")[0]), int(e.hlc.split(":")[1])) for e in evs]
    assert hlcs == sorted(hlcs) and len(set(hlcs)) == 3
    assert all(e.origin == "test-node" and e.hlc.endswith(":test-node") for e in evs)


async def test_idempotent_append_returns_original_and_appends_nothing(store):
    idem = Idempotency("a", "key-1", "fp-1")
    first = await store.append([committed("m1")], idempotency=idem, result=b'{"id":"m1"}')
    again = await store.append([committed("m2")], idempotency=idem, result=b"other")
    assert again.duplicate and again.positions == first.positions and again.result == b'{"id":"m1"}'
    assert await store.length() == 1
    with pytest.raises(IdempotencyConflict):
        await store.append([committed("m3")], idempotency=Idempotency("a", "key-1", "fp-2"))
    # scoped per agent: another scope may use the same key
    other = await store.append([committed("m4")], idempotency=Idempotency("b", "key-1", "fp-2"))
    assert not other.duplicate and await store.length() == 2
    ttl = await store.redis.ttl(keys.idempotency("a", "key-1"))
    assert 0 < ttl <= 24 * 3600


async def test_expected_version_guard_refuses_stale_and_leaves_log_unchanged(store):
    await store.append([committed("m1")])
    stale = new_event(MemoryDeleted("m1", "a-main", 3), ns="a-main", agent="a")
    with pytest.raises(GuardFailed) as exc:
        await store.append([stale], guards=[Guard.memory_version("m1", 2)])
    assert exc.value.actual == "1"
    assert await store.length() == 1
    ok = new_event(MemoryDeleted("m1", "a-main", 2), ns="a-main", agent="a")
    await store.append([ok], guards=[Guard.memory_version("m1", 1)])
    idx = await store.memory_index("m1")
    assert idx.version == 2 and idx.deleted


async def test_absent_guard_and_agent_indexes(store):
    reg = new_event(AgentRegistered("a", "t", "a-main", "a-ephemeral", "hash-a"), ns="a-main", agent="a")
    await store.append([reg], guards=[Guard.absent(keys.agent("a"), "main")])
    with pytest.raises(GuardFailed):
        await store.append([reg], guards=[Guard.absent(keys.agent("a"), "main")])
    assert await store.agent_for_key_hash("hash-a") == "a"
    assert (await store.agent_index("a")).main_namespace == "a-main"
    assert await store.namespace_owner("a-ephemeral") == "a"


async def test_batch_append_one_round_trip_many_events(store):
    evs = [committed(f"m{i}", f"memory {i}") for i in range(1000)]
    res = await store.append(evs)
    assert len(res.positions) == 1000 and await store.length() == 1000
    idx = await store.memory_indexes(["m0", "m999", "nope"])
    assert set(idx) == {"m0", "m999"}


async def test_read_ranges_and_iterate(store):
    res = await store.append([committed(f"m{i}") for i in range(10)])
    p = res.positions
    assert [e.data.memory_id for e in await store.read(p[2], p[5])] == ["m3", "m4", "m5"]
    assert [e.data.memory_id for e in await store.read(p[2], p[5], exclusive_start=False)][0] == "m2"
    assert [e.data.memory_id for e in await store.read_reverse(count=2)] == ["m9", "m8"]
    batches = [b async for b in store.iterate(batch=4)]
    assert [len(b) for b in batches] == [4, 4, 2]
    assert (await store.get(p[7])).data.memory_id == "m7"
    assert await store.last_position() == p[-1]


async def test_tail_waits_for_new_events(store):
    last = (await store.append([committed("m0")])).position
    task = asyncio.create_task(store.tail(last, block_ms=2000))
    await asyncio.sleep(0.05)
    await store.append([committed("m1")])
    got = await asyncio.wait_for(task, 3)
    assert [e.data.memory_id for e in got] == ["m1"]
    assert await store.tail(got[-1].position, block_ms=10) == []


async def test_reset_log_is_detected(store):
    res = await store.append([committed("m0")])
    await store.check_not_reset(res.position)
    await store.redis.flushall()
    with pytest.raises(LogResetError):
        await store.check_not_reset(res.position)
    # A new log, with ids beyond the old checkpoint. (Appended in the same millisecond, its first id
    # would equal the old checkpoint's "ms-0" and look like the same event: wait a few ms.)
    await asyncio.sleep(0.005)
    with pytest.raises(LogResetError, match="zhiyi replay --in-place"):
        await store.append([committed("m1")])  # this store expects the old log's epoch: refused
    await EventStore(store.redis, origin="other").append([committed("m1"), committed("m2")])
    with pytest.raises(LogResetError, match="not an event of this log"):
        await store.check_not_reset(res.position)


async def test_rebuild_indexes_from_the_log(store):
    await store.append([new_event(AgentRegistered("a", "t", "a-main", "a-ephemeral", "h"), ns="a-main", agent="a"),
                        committed("m1")])
    await store.append([new_event(MemoryDeleted("m1", "a-main", 2), ns="a-main", agent="a")])
    before = (await store.memory_index("m1"), await store.agent_index("a"))
    await store.redis.delete(keys.memory("m1"), keys.agent("a"), keys.AGENT_KEYS)
    assert await store.rebuild_indexes() == 3
    assert (await store.memory_index("m1"), await store.agent_index("a")) == before
    assert await store.agent_for_key_hash("h") == "a"


async def _calls(redis, command: str) -> int:
    stats = await redis.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


async def test_checked_reads_check_the_log_and_read_in_one_round_trip(store):
    first = (await store.append([committed("m0"), committed("m1")])).positions
    epoch = store.epoch
    assert [e.data.memory_id for e in await store.read_checked(first[0], epoch)] == ["m1"]
    assert [e.data.memory_id for e in await store.read_checked(None, epoch, first[0], 5)] == ["m0"]
    assert [e.data.memory_id for e in await store.tail_checked(first[0], epoch, block_ms=10)] == ["m1"]
    assert await store.tail_checked(first[1], epoch, block_ms=10) == []
    with pytest.raises(LogResetError):
        await store.read_checked(first[0], "another-epoch")
    with pytest.raises(LogResetError, match="not an event of this log"):
        await store.tail_checked("1-0", epoch, block_ms=10)


async def test_identical_tails_in_flight_share_one_xread_and_its_decoding(store, redis):
    """Whatever their block (a runner gathering recall audits blocks for what is left of its wait)."""
    last = (await store.append([committed("m0")])).position
    before = await _calls(redis, "xread")
    tails = [asyncio.create_task(store.tail_checked(last, store.epoch, block_ms=2000 + 100 * i)) for i in range(5)]
    await asyncio.sleep(0.05)
    await store.append([committed("m1")])
    got = await asyncio.wait_for(asyncio.gather(*tails), 3)
    assert all([e.data.memory_id for e in g] == ["m1"] for g in got)
    assert len({id(g) for g in got}) == 5 and len({id(g[0]) for g in got}) == 1   # own lists, one event
    assert await _calls(redis, "xread") - before == 1


async def test_an_empty_shared_read_is_read_again(store, redis):
    """An XRANGE in flight may predate an append its joiner knows of: an empty answer is not shared."""
    await store.append([committed("m0")])
    start = (await store.read())[0].position
    first = asyncio.create_task(store.read_checked(start, store.epoch))   # sent before the append below
    await asyncio.sleep(0)
    second = asyncio.create_task(store.read_checked(start, store.epoch))
    await store.append([committed("m1")])
    got = await asyncio.gather(first, second)
    assert [e.data.memory_id for e in got[1]] == ["m1"]


async def test_the_decoded_events_remembered_are_the_ones_in_the_log(store, redis):
    res = await store.append([committed("m0", "first")])
    one = (await store.read_checked(None, store.epoch))[0]
    assert (await store.read_checked(None, store.epoch))[0] is one   # remembered
    (_, fields), = await redis.xrange(keys.STREAM)
    await redis.delete(keys.STREAM)
    fields[b"d"] = fields[b"d"].replace(b'"first"', b'"second"')
    await redis.xadd(keys.STREAM, fields, id=res.position)   # another entry with the same id: decoded again
    assert (await store.read_checked(None, None))[0].data.content == "second"


async def test_concurrent_publishes_are_sent_together(store, redis):
    await store.append([committed("m0")])
    epoch = store.epoch
    before = await _calls(redis, "evalsha")
    await asyncio.gather(*(store.publish_checkpoint(f"p{i}", f"1-{i}", {"ns": f"1-{i}"}, epoch=epoch)
                           for i in range(6)))
    assert await store.checkpoints() == {f"p{i}": f"1-{i}" for i in range(6)}
    assert await store.generations([(f"p{i}", "ns") for i in range(6)]) == [f"1-{i}" for i in range(6)]
    assert 1 <= await _calls(redis, "evalsha") - before <= 2   # the first alone, perhaps; the rest together
    with pytest.raises(LogResetError):   # a group published into another log: each publisher is told
        await asyncio.gather(*(store.publish_checkpoint(f"p{i}", "2-0", epoch="another") for i in range(3)))
    assert (await store.checkpoints())["p0"] == "1-0"
