"""zhiyi_client.calls: how a call becomes a request (after=, Idempotency-Key, bodies, query strings)
and how an answer becomes a result, without a server."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from zhiyi_client import NotFound, PositionTracker, Zhiyi
from zhiyi_client.calls import finish, prepare
from zhiyi_client.endpoints import memories, system
from zhiyi_client.retry import Kind

BASE = "http://zhiyi.test:7821/"


def query_of(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


def test_reads_carry_the_mark_in_the_place_the_endpoint_takes_it():
    get = prepare(memories.versions("m/1"), BASE, "k", "5-0")
    assert get.url.startswith("http://zhiyi.test:7821/api/v1/memory/m%2F1/versions") and get.body is None
    assert query_of(get.url) == {"after": ["5-0"]} and get.headers["X-API-Key"] == "k"
    post = prepare(memories.recall("q", top_k=3), BASE, "k", "5-0")
    assert json.loads(post.body) == {"query": "q", "top_k": 3, "after": "5-0"}
    assert "after" not in query_of(prepare(system.health(), BASE, None, "5-0").url)     # /health takes none


def test_a_calls_own_after_wins_and_an_empty_one_sends_none():
    assert query_of(prepare(system.stats(after="9-9"), BASE, "k", "5-0").url) == {"after": ["9-9"]}
    assert query_of(prepare(system.stats(after=""), BASE, "k", "5-0").url) == {}
    assert query_of(prepare(system.stats(), BASE, "k", None).url) == {}


def test_keyed_writes_get_one_key_per_call_and_keep_the_callers():
    call = memories.commit("x", tags=("a", "b"))
    first, second = prepare(call, BASE, "k", "5-0"), prepare(call, BASE, "k", "5-0")
    assert first.headers["Idempotency-Key"] != second.headers["Idempotency-Key"]   # two logical calls
    assert json.loads(first.body) == {"content": "x", "tags": ["a", "b"]}           # no after=, no nulls
    assert prepare(memories.commit("x", idempotency_key="mine"), BASE, "k", None).headers["Idempotency-Key"] == "mine"
    assert "Idempotency-Key" not in prepare(system.register_agent("a"), BASE, "k", None).headers
    assert "Idempotency-Key" not in prepare(system.revoke_key("a"), BASE, "k", None).headers


def test_get_parameters_are_encoded_as_the_server_reads_them():
    url = prepare(memories.recall("q", include_namespaces=["a", "b"], cache=False, method="GET"), BASE, None, None).url
    assert query_of(url) == {"query": ["q"], "include_namespaces": ["a,b"], "cache": ["false"]}
    with pytest.raises(TypeError):
        memories.recall("q", include_namespaces="a")  # type: ignore[arg-type]


def test_finish_parses_raises_and_raises_the_mark_only_for_writes():
    tracker = PositionTracker("5-0")
    done = finish(memories.commit("x"), 201, {}, b'{"memory_id": "m", "version": 1, "position": "7-0"}', tracker)
    assert done.memory_id == "m" and done.raw["position"] == "7-0" and tracker.position == "7-0"
    finish(memories.recall("q"), 200, {}, b'{"results": [], "position": "9-0"}', tracker)
    assert tracker.position == "7-0"
    with pytest.raises(NotFound):
        finish(memories.versions("m"), 404, {}, b'{"error": {"code": "not_found", "message": "no"}}', tracker)


def test_sync_and_async_clients_share_one_endpoint_list():
    from zhiyi_client import AsyncZhiyi
    from zhiyi_client.api import Endpoints

    names = [n for n, v in vars(Endpoints).items() if not n.startswith("_")]
    assert len(names) >= 50
    for name in names:
        assert name not in vars(Zhiyi) and name not in vars(AsyncZhiyi)
    assert Zhiyi(BASE).commit.__doc__ == memories.commit.__doc__
    assert memories.commit("x").kind is Kind.KEYED_WRITE
