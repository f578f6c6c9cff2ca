"""The audit writer (gateway/http/audit.py) through a Redis outage: recall.served events are buffered,
spilled to disk past the bound, appended once Redis is back, never dropped and never doubled (a
batch whose first append landed but whose answer was lost is answered as a duplicate)."""

from __future__ import annotations

import asyncio

import pytest

from events.redis import keys
from events.catalogue import RecallServed, new_event
from events.codec import decode
from events.redis.client import connect
from events.redis.store import EventStore
from eventually import eventually
from gateway.http.audit import AuditWriter
from redis_process import RestartableRedis


def _audit(i: int):
    return new_event(RecallServed(query=f"query {i}", namespaces=("shared",), result_ids=(f"m{i}",),
                                  scores=(0.5,), top_k=5), ns="shared", agent="a")


@pytest.fixture
def outage_redis(tmp_path):
    server = RestartableRedis(tmp_path / "redis").start()
    yield server
    server.stop()


def _queries(server: RestartableRedis) -> list[str]:
    out = []
    for pos, fields in server.client().xrange(keys.STREAM):
        event = decode(pos, fields)
        if event.type == "recall.served":
            out.append(event.data.query)
    return out


async def test_audits_survive_an_outage_spilled_past_the_bound_and_appended_once(outage_redis, tmp_path):
    redis = connect(outage_redis.url)
    store = EventStore(redis, origin="t")
    spill = tmp_path / "spill"
    writer = AuditWriter(store, spill_dir=spill, instance="t", interval_s=0.02, max_batch=20, max_buffered=50)
    writer.start()
    try:
        for i in range(30):
            writer.add(_audit(i))
        await eventually(lambda: writer.appended == 30, timeout_s=10)
        outage_redis.stop()
        for i in range(30, 230):       # 200 recalls during the outage: 50 held in memory, the rest spilled
            writer.add(_audit(i))
            await asyncio.sleep(0.001)
        await eventually(lambda: not writer._pending, timeout_s=10)
        await asyncio.sleep(0.3)       # a few failed tries
        assert writer.buffered <= 50 + 20
        spilled_batches = len(list(spill.glob("*.json")))
        assert writer.spilled >= 130 and spilled_batches * 20 >= 130
        outage_redis.start()
        started = asyncio.get_running_loop().time()
        await eventually(lambda: writer.appended == 230, timeout_s=10)
        assert asyncio.get_running_loop().time() - started < 5   # back-off capped at 2 s
        assert not list(spill.glob("*.json"))
    finally:
        await writer.close()
        await redis.aclose()
    queries = _queries(outage_redis)
    assert sorted(queries) == sorted(f"query {i}" for i in range(230))   # each exactly once
    # confirmed batches leave no idempotency record behind, but spilled ones (another gateway of the
    # data dir may have read the same file) keep theirs for its TTL
    assert len(outage_redis.client().keys(keys.idempotency("zhiyi-audit", "*"))) == spilled_batches


async def test_a_batch_whose_answer_was_lost_is_not_appended_twice(outage_redis, tmp_path):
    redis = connect(outage_redis.url)
    store = EventStore(redis, origin="t")
    writer = AuditWriter(store, spill_dir=tmp_path / "spill", instance="t", max_batch=10)
    try:
        for i in range(10):
            writer.add(_audit(i))
        batch = writer._batches[0]     # cut into one keyed batch
        # its first append landed, but the answer never came back (OutcomeUnknown, a dropped reply)
        await store.append(batch.events, idempotency=batch.idempotency)
        assert await writer.flush()    # the retry, with the same key
    finally:
        await writer.close()
        await redis.aclose()
    assert len(_queries(outage_redis)) == 10


async def test_audits_left_on_disk_at_exit_are_appended_at_the_next_start(outage_redis, tmp_path):
    spill = tmp_path / "spill"
    redis = connect(outage_redis.url)
    writer = AuditWriter(EventStore(redis, origin="t"), spill_dir=spill, instance="t", max_batch=7)
    writer.start()
    outage_redis.stop()
    for i in range(25):
        writer.add(_audit(i))
    await writer.close()               # Redis away: nothing could be appended, all of it spilled
    await redis.aclose()
    assert writer.spilled == 25 and len(list(spill.glob("*.json"))) == 4
    outage_redis.start()
    redis = connect(outage_redis.url)
    writer = AuditWriter(EventStore(redis, origin="t"), spill_dir=spill, instance="t2", interval_s=0.02)
    writer.start()
    try:
        await eventually(lambda: writer.appended == 25, timeout_s=10)
    finally:
        await writer.close()
        await redis.aclose()
    assert sorted(_queries(outage_redis)) == sorted(f"query {i}" for i in range(25))
    assert not list(spill.glob("*.json"))
