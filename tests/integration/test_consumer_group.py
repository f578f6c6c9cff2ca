"""events.redis.consumer_groups against a real Redis: what the reactions runner relies on beyond its
own tests — creating the group twice, undecodable or deleted entries still delivered (to be
acknowledged or dead-lettered), dead letters, and a deleted stream recognised as a lost group."""

from __future__ import annotations

import pytest

from events.catalogue import MemoryCommitted, new_event
from events.redis import keys
from events.redis.consumer_groups import ConsumerGroup, group_lost


async def test_create_is_idempotent_and_reads_decoded_deliveries(store) -> None:
    group = ConsumerGroup(store.redis, "g", "w1")
    assert await group.create() is True
    assert await group.create() is False       # BUSYGROUP: it exists already
    res = await store.append([new_event(MemoryCommitted("m1", "one", "shared", "fact", "system_fact"),
                                        ns="shared", agent="alice")])
    [got] = await group.read(count=10, block_ms=10)
    assert got.position == res.position and got.event is not None and got.event.data.memory_id == "m1"
    assert not got.missing and got.error is None
    [again] = await group.read(count=10, block_ms=None, own_pending=True)   # not acknowledged yet
    assert again.position == res.position
    await group.ack(res.position)
    assert await group.read(count=10, block_ms=None, own_pending=True) == []


async def test_missing_and_undecodable_entries_are_delivered_without_an_event(store) -> None:
    group = ConsumerGroup(store.redis, "g", "w1")
    await group.create()
    bad = (await store.redis.xadd(keys.STREAM, {"t": "memory.committed", "d": "{not json"})).decode()
    gone = (await store.redis.xadd(keys.STREAM, {"x": "deleted later"})).decode()
    assert [d.position for d in await group.read(count=10, block_ms=10)] == [bad, gone]
    await store.redis.xdel(keys.STREAM, gone)
    first, second = await group.read(count=10, block_ms=None, own_pending=True)
    assert first.position == bad and first.event is None and first.error and not first.missing
    # redis-py answers a deleted entry's nil fields as {}: an event without a type, which no policy wants
    assert second.position == gone and (second.missing or second.event.type == "")
    await group.dead_letter(bad, "p", "x" * 2000, 3)
    [(_, fields)] = await store.redis.xrange(keys.REACTIONS_DEAD)
    assert fields == {b"position": bad.encode(), b"policy": b"p", b"error": b"x" * 1000, b"deliveries": b"3"}
    assert [p.position for p in await group.pending(idle_ms=0, count=10)] == [gone]


async def test_a_deleted_stream_is_a_lost_group(store) -> None:
    group = ConsumerGroup(store.redis, "g", "w1")
    await group.create()
    await store.redis.delete(keys.STREAM)
    with pytest.raises(Exception) as info:
        await group.read(count=10, block_ms=10)
    assert group_lost(info.value)
    assert not group_lost(RuntimeError("NOGROUP"))   # only a Redis reply error counts
