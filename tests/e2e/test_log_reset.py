"""A log wiped under a running gateway (issue 11, point 3): refused with 503 `log_reset` before
authentication, nothing appended to the wiped log, and served again once the projections were
rebuilt in place (`projections.core.replay_in_place`, what `zhiyi replay --in-place` runs). The real app
with its projectors in process; tests/e2e/test_up_log_reset.py does the same through `zhiyi up`."""

from __future__ import annotations

from conftest import Api, assert_error, make_settings
from eventually import eventually
from redis_process import RestartableRedis

from events.redis import keys
from events.redis.store import EventStore
from gateway.http.app import create_app
from gateway.http.appkeys import EMBEDDER, RUNNER_TASKS, STORE
from projections.core.epoch import load_epoch
from projections.core.replay_in_place import rebuild_in_place


async def _wiped(api, key: str) -> None:
    """Every route but /health answers 503 log_reset; /health too, in the error shape."""
    for method, path, body, who in (("POST", "/api/v1/recall", {"query": "tea", "cache": False}, key),
                                    ("GET", "/api/v1/stats", None, None),
                                    ("POST", "/api/v1/commit", {"content": "lost?"}, key),
                                    ("POST", "/api/v1/commit", {"content": "lost?"}, "not-a-key")):
        status, got = await api.call(method, path, who, json=body) if who else await api.call(method, path, json=body)
        assert status == 503, (path, got)
        assert_error(got, "log_reset")
        assert "zhiyi replay --in-place" in got["error"]["message"]
    status, got = await api.call("GET", "/health", None)
    assert status == 503
    assert_error(got, "log_reset")
    assert got["error"]["details"]["status"] == "log_reset"
    assert got["error"]["details"]["log"]["epoch"] is None  # wiped: the key is gone with the stream


async def test_a_wiped_log_is_refused_until_rebuilt_in_place(api, tmp_path) -> None:
    app = api.client.app
    store = app[STORE]
    key = await api.register("ana")
    status, _ = await api.commit(key, "green tea at nine")
    assert status == 201
    await api.settle()
    data_dir = tmp_path / "data"
    old_epoch = load_epoch(data_dir)
    assert old_epoch and old_epoch == await store.log_epoch()

    await store.redis.flushall()
    await _wiped(api, key)
    assert await store.redis.xlen(keys.STREAM) == 0  # nothing appended: not by the request, not in background
    assert await store.redis.exists(keys.EPOCH) == 0  # nor a new epoch created behind the operator's back

    done = await rebuild_in_place(EventStore(store.redis, origin="replay"), data_dir, app[EMBEDDER])
    assert done.previous_epoch == old_epoch and done.epoch != old_epoch
    assert done.kept == data_dir / f"projections.{old_epoch}" and (done.kept / "memories").is_dir()
    assert load_epoch(data_dir) == done.epoch

    status, body = await api.call("GET", "/health", None)
    assert status == 200 and body["status"] == "ok", body
    status, _ = await api.recall(key, "tea")
    assert status == 401  # the old key was in the wiped log: agents register again
    key = await api.register("ana")
    status, committed = await api.commit(key, "oolong after lunch")
    assert status == 201
    status, got = await api.recall(key, "oolong", after=committed["position"], cache=False)
    assert status == 200
    assert [r["content"] for r in got["results"]] == ["oolong after lunch"]  # the lost memory is not served
    status, stats = await api.call("GET", "/api/v1/stats")
    assert status == 200 and stats["memories"]["total"] == 1
    assert not [t.get_name() for t in app[RUNNER_TASKS] if t.done()]  # projectors, reactions: all still running


async def test_a_redis_outage_is_not_a_reset(aiohttp_client, tmp_path, use_embedder) -> None:
    """Redis stopped under the running app: reads go on from the projections (no log_reset), /health
    says `unavailable`; Redis back with its data: served as before."""
    server = RestartableRedis(tmp_path / "redis").start()  # AOF on: the log survives the stop
    try:
        url = server.url
        app = create_app(make_settings(url, tmp_path), embedder=use_embedder)
        api = Api(await aiohttp_client(app))
        key = await api.register("bo")
        status, committed = await api.commit(key, "the staging database listens on port 5433")
        assert status == 201
        status, got = await api.recall(key, "staging database", after=committed["position"], cache=False)
        assert status == 200 and got["results"]

        server.stop()  # an outage, not a wipe: the AOF keeps the log
        status, got = await api.recall(key, "staging database", cache=False)
        assert status == 200 and got["results"], got  # served from the projections (the key is cached)
        status, got = await api.call("GET", "/health", None)
        assert status == 503
        assert_error(got, "unavailable")
        status, got = await api.commit(key, "written during the outage")
        assert status == 503 and got["error"]["code"] != "log_reset", got

        server.start()
        async def healthy() -> bool:
            return (await api.call("GET", "/health", None))[0] == 200

        await eventually(healthy, timeout_s=15, interval_s=0.1, what="/health 200 after Redis came back")
        status, got = await api.commit(key, "written after the outage")
        assert status == 201, got
    finally:
        server.stop()

