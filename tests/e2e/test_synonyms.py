"""Synonyms through the app: admin adds and lists them; agents are refused; bad bodies are 400s;
the projection is part of `zhiyi digest` and `zhiyi replay --verify`."""

from __future__ import annotations

import asyncio
import contextlib
import io

import orjson
import pytest

from gateway.cli.main import main
from tests.e2e.conftest import assert_error

PATH = "/api/v1/admin/synonyms"


async def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(out):
            return main(list(argv))

    return await asyncio.to_thread(run), out.getvalue()


async def test_admin_adds_synonyms_and_lists_them(api):
    status, body = await api.call("POST", PATH, json={"term": "K8s", "synonyms": ["Kubernetes", "容器编排", "k8s"]})
    assert status == 201, body
    assert body["term"] == "K8s" and body["synonyms"] == ["Kubernetes", "容器编排"]  # the term itself is dropped
    assert body["namespace"] == "shared" and body["position"]
    status, second = await api.call("POST", PATH, json={"term": "数据库", "synonyms": ["DB"], "namespace": "ops-main"})
    assert status == 201, second

    status, listed = await api.call("GET", PATH, params={"after": second["position"]})
    assert status == 200, listed
    assert [(s["term"], s["synonyms"], s["namespace"], s["position"]) for s in listed["synonyms"]] == [
        ("K8s", ["Kubernetes", "容器编排"], "shared", body["position"]),
        ("数据库", ["DB"], "ops-main", second["position"])]
    assert listed["total"] == 2 and listed["position"] == second["position"]
    status, only = await api.call("GET", PATH, params={"after": second["position"], "namespace": "ops-main"})
    assert status == 200 and [s["term"] for s in only["synonyms"]] == ["数据库"]

    _, health = await api.call("GET", "/health", key=None)
    assert health["projectors"]["synonyms"]["position"] == second["position"]


async def test_agent_keys_are_refused(api):
    key = await api.register("alice")
    for method, body in (("POST", {"term": "a", "synonyms": ["b"]}), ("GET", None)):
        status, err = await api.call(method, PATH, key, json=body)
        assert status == 403
        assert_error(err, "admin_required")
    status, err = await api.call("GET", PATH, key=None)
    assert status == 401
    assert_error(err, "unauthorized")


@pytest.mark.parametrize("body", [
    {"synonyms": ["b"]},
    {"term": "", "synonyms": ["b"]},
    {"term": "   ", "synonyms": ["b"]},
    {"term": "a"},
    {"term": "a", "synonyms": []},
    {"term": "a", "synonyms": "b"},
    {"term": "a", "synonyms": [""]},
    {"term": "a", "synonyms": [1]},
    {"term": "a" * 65, "synonyms": ["b"]},
    {"term": "a", "synonyms": ["b" * 65]},
    {"term": "a", "synonyms": [f"s{i}" for i in range(33)]},
    {"term": "a\x00", "synonyms": ["b"]},
    {"term": "a", "synonyms": ["b"], "namespace": "not a namespace"},
    {"term": 5, "synonyms": ["b"]},
])
async def test_bad_bodies_are_400(api, body):
    status, err = await api.call("POST", PATH, json=body)
    assert status == 400, err
    assert_error(err, "invalid_request")


async def test_a_group_without_a_new_term_is_422(api):
    status, err = await api.call("POST", PATH, json={"term": "a", "synonyms": ["A", " a "]})  # nothing different
    assert status == 422, err
    assert_error(err, "unprocessable")


async def test_bad_json_and_list_parameters(api):
    status, err = await api.call("POST", PATH, data=b"[1, 2", headers={"Content-Type": "application/json"})
    assert status == 400
    assert_error(err, "invalid_json")
    for params in ({"limit": "0"}, {"limit": "x"}, {"namespace": "bad ns"}, {"after": "nope"}):
        status, err = await api.call("GET", PATH, params=params)
        assert status == 400, params
        assert_error(err, "invalid_request")
    assert (await api.log_length()) == 0  # nothing was appended


async def test_digest_and_replay_verify_include_synonyms(api, redis_url, tmp_path):
    key = await api.register("alice")
    await api.commit(key, "the staging cluster runs k8s 1.30")
    _, added = await api.call("POST", PATH, json={"term": "k8s", "synonyms": ["kubernetes"]})
    status, _ = await api.call("GET", PATH, params={"after": added["position"]})
    assert status == 200
    status, _ = await api.call("GET", "/api/v1/stats", params={"after": added["position"]})
    assert status == 200
    common = ["--data-dir", str(tmp_path / "data"), "--redis-url", redis_url]
    rc, out = await _cli("digest", *common, "--json")
    assert rc == 0
    live = {p["projection"]: p for p in orjson.loads(out)["projections"]}
    assert set(live) >= {"memories", "synonyms"} and live["synonyms"]["position"] == added["position"]
    rc, out = await _cli("replay", *common, "--into", str(tmp_path / "verify"), "--verify", "--json")
    report = orjson.loads(out)
    assert rc == 0 and report["ok"], report["mismatches"]
    rc, out = await _cli("replay", *common, "--into", str(tmp_path / "full"), "--json")
    rebuilt = {p["projection"]: p for p in orjson.loads(out)["projections"]}
    assert rebuilt["synonyms"]["digest"] == live["synonyms"]["digest"]


async def test_openapi_documents_the_new_endpoints(api):
    status, doc = await api.call("GET", "/api/v1/openapi.json", None)
    assert status == 200
    for path, methods in {"/api/v1/admin/synonyms": {"post", "get"}, "/api/v1/eval/run": {"post"},
                          "/api/v1/eval/generate": {"post"}, "/api/v1/eval/history": {"get"}}.items():
        assert methods <= set(doc["paths"][path]), path
    refs = {v["$ref"].rsplit("/", 1)[1] for v in _walk(doc["paths"]) if "$ref" in v}
    assert {r for r in refs if r in doc["components"]["schemas"] or r in doc["components"]["responses"]} == refs


def _walk(node):
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)
