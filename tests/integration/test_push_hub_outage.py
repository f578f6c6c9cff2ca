"""The push hub (gateway/push/hub.py) through a Redis outage: its tail and its routing (the write-side
index lookups) fail while Redis is away; it keeps trying, and once Redis is back it delivers what
follows, in order, without repeating what it had delivered."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from events.catalogue import AgentRegistered, MemoryCommitted, MemoryMarkedStale, new_event
from events.redis.client import connect
from events.redis.store import EventStore
from eventually import eventually
from gateway.push.connection import PushConnection, PushLimits
from gateway.push.hub import PushHub
from gateway.push.lookups import ReadModelLookups
from projections.core.waiter import CheckpointWaiter
from projections.graph.reader import GraphReader
from projections.memories.reader import MemoriesReader
from projections.queries.push.router import PushRouter
from redis_process import RestartableRedis


class Socket:
    """The server side of a client's socket, as the connection writes to it: the frames sent."""

    def __init__(self) -> None:
        self.frames: list[dict] = []

    async def send_str(self, text: str) -> None:
        self.frames.append(orjson.loads(text))

    async def close(self, **_: object) -> None:
        pass


@pytest.fixture
def outage_redis(tmp_path):
    server = RestartableRedis(tmp_path / "redis").start()
    yield server
    server.stop()


def _stale(memory_id: str, version: int):
    return new_event(MemoryMarkedStale(memory_id, "alice-main", version, f"stale {version}"), ns="alice-main",
                     agent="system", by="reaction")


async def test_the_hub_rides_out_a_redis_outage(outage_redis, tmp_path):
    redis = connect(outage_redis.url)
    store = EventStore(redis, origin="t")
    await store.open_epoch()
    await store.append([new_event(AgentRegistered("alice", "generic", "alice-main", "alice-ephemeral", "a" * 64),
                                  ns="alice-main", agent="alice", by="admin"),
                        new_event(MemoryCommitted("m1", "the build server is build-01", "alice-main", "fact",
                                                  "system_fact"), ns="alice-main", agent="alice")])
    lookups = ReadModelLookups(store, GraphReader(tmp_path / "graph"), MemoriesReader(tmp_path / "memories"),
                               CheckpointWaiter(store))
    hub, stopping = PushHub(store, PushRouter(lookups)), asyncio.Event()
    task = asyncio.create_task(hub.run(stopping))
    socket = Socket()
    conn = PushConnection(socket, "alice", PushLimits(), abort=lambda: None)
    try:
        await hub.attach(conn, None)
        first = (await store.append([_stale("m1", 2)])).position
        await eventually(lambda: len(socket.frames) == 2, timeout_s=5)
        outage_redis.stop()
        await asyncio.sleep(1.5)                    # the tail fails, backs off, tries again
        assert not task.done()
        outage_redis.start()
        second = await eventually(lambda: _append_when_up(store, _stale("m1", 3)), timeout_s=10)
        await eventually(lambda: len(socket.frames) == 3, timeout_s=10)
        assert [f["type"] for f in socket.frames] == ["connected", "memory.updated", "memory.updated"]
        assert [f["position"] for f in socket.frames[1:]] == [first, second]
        assert [f["data"]["new_version"] for f in socket.frames[1:]] == [2, 3]
    finally:
        stopping.set()
        await task
        await hub.detach(conn)
        await redis.aclose()


async def _append_when_up(store: EventStore, event) -> str | None:
    try:
        return (await store.append([event])).position
    except Exception:  # noqa: BLE001 - Redis still loading or reconnecting
        return None
