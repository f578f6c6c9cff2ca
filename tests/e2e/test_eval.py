"""The evaluation framework through the app: generate a golden set, run it, explicit queries, history."""

from __future__ import annotations

import asyncio
import contextlib
import io

import orjson
import pytest

from gateway.cli.main import main
from tests.e2e.conftest import assert_error

MEMORIES = [
    ("ComfyUI 端口是 8189（8188 被占用）", "fact"),
    ("主力机显卡是 RTX 3050，4GB 显存", "fact"),
    ("The user prefers short answers with the conclusion first", "preference"),
    ("用户喜欢用中文沟通，技术术语保留英文", "preference"),
    ("Decided to use PostgreSQL 16 for the billing service", "decision"),
    ("项目截止日期是十二月十五日，之前冻结新功能", "constraint"),
    ("Deploy with docker compose up -d on the staging host", "pattern"),
    ("重启 nginx 之前先运行 nginx -t 检查配置", "pattern"),
]
REPORT_KEYS = {"recall_at_5", "precision_at_5", "mean_reciprocal_rank", "recall_at_5_by_tag", "recall_by_agent",
               "query_details", "queries", "top_k", "golden_set_id", "position"}


async def _seed(api) -> tuple[str, list[str], str]:
    key = await api.register("alice")
    ids, last = [], ""
    for content, category in MEMORIES:
        status, body = await api.commit(key, content, category=category)
        assert status == 201, body
        ids.append(body["memory_id"])
        last = body["position"]
    return key, ids, last


async def _types(store) -> list[str]:
    return [e.type for e in await store.read()]


async def test_generate_run_explicit_queries_and_history(api, store):
    key, ids, last = await _seed(api)
    status, err = await api.call("POST", "/api/v1/eval/run", json={"after": last})
    assert status == 404
    assert_error(err, "no_golden_set")

    status, golden = await api.call("POST", "/api/v1/eval/generate", json={"seed": 7, "after": last})
    assert status == 201, golden
    assert golden["golden_set_id"].startswith("gs-") and len(golden["queries"]) == 12
    assert {q["tag"] for q in golden["queries"]} == {"system_fact", "user_pref", "proj_context", "tool_usage"}
    assert {q["difficulty"] for q in golden["queries"]} == {"easy", "medium", "hard"}
    assert all(q["expected_ids"][0] in ids and q["agent_id"] == "alice" for q in golden["queries"])
    status, again = await api.call("POST", "/api/v1/eval/generate", json={"seed": 7})
    assert status == 201 and again["golden_set_id"] == golden["golden_set_id"]  # deterministic

    status, first = await api.call("POST", "/api/v1/eval/run")
    assert status == 200, first
    assert REPORT_KEYS <= set(first) and first["golden_set_id"] == golden["golden_set_id"]
    assert first["queries"] == 12 and first["top_k"] == 5 and first["recall_at_5"] > 0
    assert set(first["recall_at_5_by_tag"]) == {"system_fact", "user_pref", "proj_context", "tool_usage"}
    assert set(first["recall_by_agent"]) == {"alice"}
    detail = first["query_details"][0]
    assert {"query", "expected_ids", "hits", "misses", "recall_at_5", "precision_at_5"} <= set(detail)

    explicit = {"top_k": 5, "queries": [
        {"query": MEMORIES[0][0], "expected_ids": [ids[0]], "tag": "system_fact", "agent_id": "alice"},
        {"query": "ComfyUI 端口", "expected_ids": ["no-such-memory"], "tag": "ghost", "agent_id": "alice"}]}
    status, second = await api.call("POST", "/api/v1/eval/run", json=explicit)
    assert status == 200, second
    found, missing = second["query_details"]
    assert found["recall_at_5"] == 1.0 and found["hits"] == [ids[0]] and found["misses"] == []
    assert missing["recall_at_5"] == 0.0 and missing["misses"] == ["no-such-memory"]
    assert second["recall_at_5"] == 0.5 and second["golden_set_id"] is None
    assert second["recall_at_5_by_tag"] == {"ghost": 0.0, "system_fact": 1.0}
    assert second["mean_reciprocal_rank"] == 0.5

    status, hist = await api.call("GET", "/api/v1/eval/history", params={"limit": "10"})
    assert status == 200, hist
    assert [r["position"] for r in hist["runs"]] == [second["position"], first["position"]]
    assert hist["runs"][0]["metrics"]["recall_at_5"] == 0.5 and hist["runs"][0]["timestamp"].endswith("Z")
    assert hist["delta"]["recall_at_5"] == pytest.approx(0.5 - first["recall_at_5"], abs=1e-6)
    assert hist["regressed"] is (0.5 - first["recall_at_5"] < -0.05)

    types = await _types(store)
    assert "recall.served" not in types  # evaluation runs are not agent recalls
    assert types.count("eval.completed") == 2 and types.count("eval.golden_set_created") == 2


async def test_agent_keys_evaluate_their_own_scope_only(api):
    key, ids, last = await _seed(api)
    bob = await api.register("bob")
    status, err = await api.call("POST", "/api/v1/eval/generate", key, json={})
    assert status == 403
    assert_error(err, "admin_required")
    own = {"queries": [{"query": MEMORIES[2][0], "expected_ids": [ids[2]]}], "after": last}
    status, mine = await api.call("POST", "/api/v1/eval/run", key, json=own)
    assert status == 200 and mine["recall_at_5"] == 1.0, mine
    status, theirs = await api.call("POST", "/api/v1/eval/run", bob, json=own)
    assert status == 200 and theirs["recall_at_5"] == 0.0  # bob cannot see alice-main
    status, err = await api.call("POST", "/api/v1/eval/run", bob,
                                 json={"queries": [{"query": "x", "expected_ids": [ids[0]], "agent_id": "alice"}]})
    assert status == 403
    assert_error(err, "forbidden")
    status, hist = await api.call("GET", "/api/v1/eval/history", key)
    assert status == 200 and [r["position"] for r in hist["runs"]] == [mine["position"]]
    status, hist = await api.call("GET", "/api/v1/eval/history")
    assert len(hist["runs"]) == 2 and hist["delta"] is not None


@pytest.mark.parametrize("body", [
    {"queries": "q"},
    {"queries": []},
    {"queries": [{"query": "q"}]},
    {"queries": [{"query": "q", "expected_ids": []}]},
    {"queries": [{"query": "", "expected_ids": ["m1"]}]},
    {"queries": [{"query": "q", "expected_ids": ["bad id"]}]},
    {"queries": [{"query": "q", "expected_ids": ["m1"], "agent_id": "bad agent"}]},
    {"queries": ["q"]},
    {"queries": [{"query": "q", "expected_ids": ["m1"]}], "golden_set_id": "gs-1"},
    {"top_k": 0},
    {"top_k": 101},
    {"golden_set_id": "bad id"},
    {"namespace": "bad ns"},
])
async def test_bad_run_bodies_are_400(api, body):
    status, err = await api.call("POST", "/api/v1/eval/run", json=body)
    assert status == 400, err
    assert_error(err, "invalid_request")


async def test_bad_inputs_elsewhere(api):
    status, err = await api.call("POST", "/api/v1/eval/run", data=b"{", headers={"Content-Type": "application/json"})
    assert status == 400
    assert_error(err, "invalid_json")
    for body in ({"n": 0}, {"n": "12"}, {"seed": -1}, {"namespace": "bad ns"}):
        status, err = await api.call("POST", "/api/v1/eval/generate", json=body)
        assert status == 400, body
        assert_error(err, "invalid_request")
    status, err = await api.call("POST", "/api/v1/eval/generate", json={})
    assert status == 404
    assert_error(err, "no_memories")
    status, err = await api.call("POST", "/api/v1/eval/run", json={"golden_set_id": "gs-0000"})
    assert status == 404
    assert_error(err, "not_found")
    for limit in ("0", "x", "1001"):
        status, err = await api.call("GET", "/api/v1/eval/history", params={"limit": limit})
        assert status == 400
        assert_error(err, "invalid_request")
    status, hist = await api.call("GET", "/api/v1/eval/history")
    assert status == 200 and hist == {"runs": [], "delta": None, "regressed": False}


async def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(out):
            return main(list(argv))

    return await asyncio.to_thread(run), out.getvalue()


async def test_cli_generate_run_history(api, redis_url, tmp_path):
    _, _, last = await _seed(api)
    status, _ = await api.call("GET", "/api/v1/stats", params={"after": last})
    assert status == 200
    common = ["--data-dir", str(tmp_path / "data"), "--redis-url", redis_url]
    rc, out = await _cli("eval", "generate", *common, "--n", "6", "--seed", "1", "--json")
    assert rc == 0, out
    golden = orjson.loads(out)
    assert len(golden["queries"]) == 6
    rc, out = await _cli("eval", "run", *common, "--top-k", "5", "--json")
    assert rc == 0, out
    report = orjson.loads(out)
    assert report["golden_set_id"] == golden["golden_set_id"] and report["queries"] == 6
    assert report["recall_at_5"] > 0 and report["delta"] is None
    rc, out = await _cli("eval", "run", *common)
    assert rc == 0 and "recall_at_5" in out
    rc, out = await _cli("eval", "history", *common)
    assert rc == 0 and "delta (newest - previous)" in out and len(out.splitlines()) == 3
