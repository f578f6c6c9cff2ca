"""End-to-end fixtures: the real aiohttp app over a real Redis, real LanceDB in tmp, the real USE model."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass, field

import pytest

from events.redis import keys
from events.clock import ManualClock
from gateway.http.app import create_app
from gateway.http.appkeys import AUDIT, CLOCK, PROJECTORS, STORE, WAITER
from gateway.process.settings import Settings
from projections.models.cached_embedder import CachedEmbedder
from projections.models.use_embedder import LocalUSEEmbedder

ADMIN_KEY = "test-admin-key"


@pytest.fixture(scope="session")
def use_embedder():
    """One real default model for the whole session (loading it per app would dominate the suite)."""
    emb = CachedEmbedder(LocalUSEEmbedder(threads=1), None)
    emb.embed(["warm up"])
    return emb


@dataclass
class Api:
    client: object
    keys: dict[str, str] = field(default_factory=dict)

    def headers(self, key: str | None, **extra: str) -> dict:
        h = {"X-API-Key": key} if key else {}
        h.update(extra)
        return h

    async def call(self, method: str, path: str, key: str | None = ADMIN_KEY, json=None, data=None,
                   headers: dict | None = None, params=None):
        resp = await self.client.request(method, path, json=json, data=data, params=params,
                                         headers={**self.headers(key), **(headers or {})})
        body = await resp.json() if resp.content_type == "application/json" else await resp.text()
        return resp.status, body

    async def register(self, agent_id: str, **extra) -> str:
        status, body = await self.call("POST", "/api/v1/agents/register", json={"agent_id": agent_id, **extra})
        assert status == 201, body
        self.keys[agent_id] = body["api_key"]
        return body["api_key"]

    async def commit(self, key: str, content: str, **fields):
        return await self.call("POST", "/api/v1/commit", key, json={"content": content, **fields})

    async def recall(self, key: str, query: str, **fields):
        return await self.call("POST", "/api/v1/recall", key, json={"query": query, **fields})

    @property
    def clock(self) -> ManualClock:
        return self.client.app[CLOCK]

    async def settle(self, timeout_s: float = 30.0) -> str:
        """Wait until the system is quiet: audits appended, every event handled by the reactions
        (delivered and acknowledged) and every projection at the end of the log. Returns the last
        position."""
        app = self.client.app
        store = app[STORE]
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            await app[AUDIT].flush()
            last = await store.last_position()
            groups = await store.redis.xinfo_groups(keys.STREAM) if last else []
            group = next((g for g in groups if _s(g["name"]) == keys.REACTIONS_GROUP), None)
            reacted = group is None or (_s(group["last-delivered-id"]) == last and int(group["pending"]) == 0)
            if reacted and (not last or await app[WAITER].wait(app[PROJECTORS], last, 1.0)):
                if await store.last_position() == last:
                    return last or ""
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"not settled after {timeout_s} s (last {last}, group {group})")
            await asyncio.sleep(0.05)

    async def count_events(self, event_type: str) -> int:
        """Events of one type in the log, once the system is quiet."""
        from events.codec import decode

        await self.settle()
        items = await self.client.app[STORE].redis.xrange(keys.STREAM)
        return sum(1 for pos, fields in items if decode(_s(pos), fields).type == event_type)

    async def log_length(self) -> int:
        """Events in the log once the system is quiet (buffered recall audits appended, reactions'
        follow-ups appended), so that a before/after comparison sees only the request's writes."""
        await self.settle()
        status, body = await self.call("GET", "/api/v1/stats")
        assert status == 200
        return body["events"]["total"]


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def make_settings(redis_url: str, tmp_path, **overrides) -> Settings:
    # the triggers are not evaluated in the background (a test runs them: `TRIGGERS.run_due`)
    base = Settings(redis_url=redis_url, data_dir=tmp_path / "data", api_key=ADMIN_KEY, instance_id="e2e",
                    tick_interval_s=0)
    return dataclasses.replace(base, **overrides)


@pytest.fixture
def settings_overrides() -> dict:
    return {}


@pytest.fixture
async def api(aiohttp_client, redis_url, tmp_path, use_embedder, settings_overrides) -> Api:
    app = create_app(make_settings(redis_url, tmp_path, **settings_overrides), embedder=use_embedder,
                     clock=ManualClock(int(time.time() * 1000)))
    client = await aiohttp_client(app)
    return Api(client)


def assert_error(body, code: str | None = None) -> None:
    """The one JSON error shape."""
    assert isinstance(body, dict) and set(body) == {"error"}, body
    err = body["error"]
    assert set(err) == {"code", "message", "details"}, err
    assert isinstance(err["code"], str) and isinstance(err["message"], str) and isinstance(err["details"], dict)
    if code is not None:
        assert err["code"] == code, err
