"""The recall pipeline through the HTTP API: hybrid search, Chinese full text, MMR, shared fallback,
search cache with generation-based invalidation, bootstrap, bad inputs."""

from __future__ import annotations

import numpy as np

from gateway.http.appkeys import READER, RECALL
from tests.e2e.conftest import assert_error


async def _batch(api, key: str, contents: list[str], **common) -> dict[str, str]:
    status, body = await api.call("POST", "/api/v1/batch-commit", key,
                                  json={"entries": [{"content": c, **common} for c in contents]})
    assert status == 201, body
    return {c: r["memory_id"] for c, r in zip(contents, body["results"])} | {"__position": body["position"]}


async def _dense_ids(api, query: str, namespaces: list[str], k: int) -> list[str]:
    app = api.client.app
    vector = await app[RECALL].queries.vector(query)
    return [mid for mid, _ in await app[READER].adense(vector, namespaces, k)]


async def test_hybrid_finds_an_identifier_that_vector_search_misses(api):
    key = await api.register("alice")
    distractors = [f"The deployment ticket for service {name} was closed after the rollout"
                   for name in ("billing", "search", "auth", "gateway", "payments", "mailer", "reports", "cron")]
    target = "QX-4471 refers to the flaky disk on rack seven"
    ids = await _batch(api, key, [*distractors, target])
    query = "was ticket QX-4471 closed after the service rollout"
    status, body = await api.recall(key, query, top_k=3, diversity=0.0, after=ids["__position"])
    assert status == 200 and body["results"][0]["memory_id"] == ids[target]
    assert ids[target] not in await _dense_ids(api, query, ["alice-main", "shared"], 3)  # vector search alone


async def test_chinese_full_text_hit(api):
    key = await api.register("alice")
    contents = ["主力机的显卡是 RTX 3050，显存只有 4GB", "每天凌晨三点执行数据库备份任务",
                "用户喜欢喝绿茶，不喜欢咖啡", "知识图谱存放在 SQLite 数据库里"]
    ids = await _batch(api, key, contents)
    status, body = await api.recall(key, "显存多大", top_k=2, diversity=0.0, after=ids["__position"])
    assert status == 200 and body["results"][0]["memory_id"] == ids[contents[0]]
    lexical = await api.client.app[READER].alexical("显存", ["alice-main"], 5)  # the lexical stage alone
    assert [mid for mid, _ in lexical] == [ids[contents[0]]]


async def test_mmr_demotes_near_duplicates(api):
    key = await api.register("alice")
    dupes = ["Nginx listens on port 8080 on the staging server",
             "Nginx listens on port 8080 on the staging server.",
             "On the staging server, nginx listens on port 8080"]
    other = "The staging server's nginx config lives in /etc/nginx/sites-enabled"
    ids = await _batch(api, key, [*dupes, other])
    query = "staging server nginx port"
    _, plain = await api.recall(key, query, top_k=4, diversity=0.0, after=ids["__position"])
    _, diverse = await api.recall(key, query, top_k=4, diversity=0.9)
    plain_ids = [r["memory_id"] for r in plain["results"]]
    diverse_ids = [r["memory_id"] for r in diverse["results"]]
    assert set(plain_ids[:3]) == {ids[d] for d in dupes}  # relevance order: the three duplicates first
    assert ids[other] in diverse_ids[:2] and diverse_ids != plain_ids


async def test_shared_fallback_when_a_private_namespace_has_too_few_hits(api):
    key = await api.register("alice")
    own = await _batch(api, key, ["alice keeps her notes in Obsidian"])
    shared = await _batch(api, key, ["The GPU server has an RTX 4090 with 24 GB of memory",
                                     "GPU jobs are scheduled with slurm on the GPU server"], namespace="shared")
    status, body = await api.recall(key, "GPU server memory", namespace="alice-main", diversity=0.0,
                                    after=shared["__position"])
    assert status == 200
    fallback = [r for r in body["results"] if r.get("fallback") == "shared"]
    assert {r["memory_id"] for r in fallback} >= {shared["The GPU server has an RTX 4090 with 24 GB of memory"]}
    assert all(r["namespace"] == "shared" for r in fallback)
    assert all(r["score"] <= 0.5 for r in fallback)  # shared hits count half
    assert body["results"][0]["memory_id"] == own["alice keeps her notes in Obsidian"]
    # asking shared itself never falls back
    _, plain = await api.recall(key, "GPU server memory", namespace="shared")
    assert not any("fallback" in r for r in plain["results"])


async def test_cache_hit_and_invalidation_by_a_new_commit(api):
    key = await api.register("alice")
    first = await _batch(api, key, ["Backups run every night at 3:00 on the NAS"])
    query = "when do backups run"
    _, a = await api.recall(key, query, after=first["__position"])
    _, b = await api.recall(key, query)
    assert a["cached"] is False and b["cached"] is True and b["results"] == a["results"]
    await api.settle()  # the two recall.served events appended and projected: they must not invalidate
    _, c = await api.recall(key, query)
    assert c["cached"] is True
    _, commit = await api.commit(key, "Backups also run every Sunday at noon on the cloud bucket")
    await api.settle()   # the commit also confirms the first memory (PassiveValidator): a change of its own
    _, d = await api.recall(key, query, after=commit["position"])
    assert d["cached"] is False and commit["memory_id"] in {r["memory_id"] for r in d["results"]}
    _, e = await api.recall(key, query, cache=False)
    assert e["cached"] is False
    # another agent's private commit does not touch alice's namespaces' generations
    bob = await api.register("bob")
    _, other = await api.commit(bob, "bob's backups are manual")
    await api.settle()
    _, f = await api.recall(key, query, after=other["position"])
    assert f["cached"] is True


async def test_bootstrap_returns_core_facts_first(api):
    key = await api.register("alice")
    await _batch(api, key, ["normal fact one", "normal fact two"])
    core = await _batch(api, key, ["The user's name is 牧尘 and they prefer conclusions first"], tier="core")
    status, body = await api.call("GET", "/api/v1/bootstrap", key, params={"after": core["__position"]})
    assert status == 200 and body["results"][0]["tier"] == "core" and len(body["results"]) == 3
    status, body = await api.call("GET", "/api/v1/bootstrap", key, params={"limit": "1"})
    assert status == 200 and [r["content"] for r in body["results"]] == [
        "The user's name is 牧尘 and they prefer conclusions first"]
    for bad in ("0", "51", "x"):
        status, body = await api.call("GET", "/api/v1/bootstrap", key, params={"limit": bad})
        assert status == 400
        assert_error(body, "invalid_request")


async def test_bad_pipeline_parameters(api):
    key = await api.register("alice")
    before = await api.log_length()
    for extra in ({"diversity": 1.5}, {"diversity": "high"}, {"cache": "yes"}, {"min_score": 3},
                  {"context": -0.1}, {"context": 2}, {"context": "near"}):
        status, body = await api.recall(key, "anything", **extra)
        assert status == 400, extra
        assert_error(body, "invalid_request")
    for params in ({"query": "q", "diversity": "lots"}, {"query": "q", "context": "x"}, {"query": "q", "context": "5"}):
        status, body = await api.call("GET", "/api/v1/recall", key, params=params)
        assert status == 400, params
    assert await api.log_length() == before  # rejected recalls leave no audit event


async def test_results_carry_similarity_and_are_unit_vectors_in_the_index(api):
    key = await api.register("alice")
    ids = await _batch(api, key, ["Redis keeps the event log in a stream called zhiyi:events"])
    _, body = await api.recall(key, "where is the event log kept", after=ids["__position"])
    hit = body["results"][0]
    assert 0.0 < hit["similarity"] <= 1.0 and 0.0 < hit["score"] <= 1.0
    vector = await api.client.app[RECALL].queries.vector("where is the event log kept")
    assert np.isclose(np.linalg.norm(vector), 1.0, atol=1e-3)


async def test_synonyms_expand_the_lexical_query_and_invalidate_the_cache(api):
    key = await api.register("alice")
    ids = await _batch(api, key, ["The quarterly planning exercise starts on March 3",
                                  "The planning board meets every Monday", "Exercise sessions start at 7 am",
                                  "Quarterly reports are due in April"], namespace="shared")
    target = ids["The quarterly planning exercise starts on March 3"]
    _, first = await api.recall(key, "when does QPX begin", after=ids["__position"])
    _, again = await api.recall(key, "when does QPX begin")
    assert again["cached"] is True
    status, syn = await api.call("POST", "/api/v1/admin/synonyms",
                                 json={"term": "QPX", "synonyms": ["quarterly planning exercise"]})
    assert status == 201, syn
    _, after = await api.recall(key, "when does QPX begin", diversity=0.0, after=syn["position"])
    assert after["cached"] is False and after["results"][0]["memory_id"] == target


async def test_queries_with_search_syntax_characters_are_plain_text(api):
    key = await api.register("alice")
    ids = await _batch(api, key, ["The config key is redis:url and the port is 6379 (default)"])
    for query in ['redis:url "port" (default) AND OR NOT * ? ~ ^ \\ -6379', "???", "（）【】「」", "a" * 2000]:
        status, body = await api.recall(key, query, after=ids["__position"])
        assert status == 200, (query, body)
    _, body = await api.recall(key, 'redis:url "port" AND', diversity=0.0)
    assert body["results"][0]["memory_id"] == ids["The config key is redis:url and the port is 6379 (default)"]


async def test_recall_is_served_from_the_in_memory_index_and_reads_its_writes(api):
    key = await api.register("alice")
    index = api.client.app[RECALL].index
    ids = await _batch(api, key, ["The VPN gateway rotates its certificates every Sunday"])
    status, body = await api.recall(key, "when are VPN certificates rotated", after=ids["__position"])
    assert status == 200 and body["results"][0]["memory_id"] == ids["The VPN gateway rotates its certificates every Sunday"]
    assert index.ready and index.stats()["namespaces"]["alice-main"]["rows"] == 1
    for round_ in range(3):  # each write is visible to the very next recall that waits for it
        more = await _batch(api, key, [f"Deploy freeze number {round_} starts on Friday at noon"])
        status, body = await api.recall(key, f"deploy freeze number {round_}", top_k=1, diversity=0.0,
                                        after=more["__position"], cache=False)
        assert body["results"][0]["memory_id"] == more[f"Deploy freeze number {round_} starts on Friday at noon"]



async def test_health_says_whether_recalls_are_served_from_memory(api):
    """/health's serving_index: ready once recalls are served from memory (LanceDB serves them while it
    loads), and the memories checkpoint it reflects: the memories projector's, once it caught up."""
    from tests.eventually import eventually

    key = await api.register("alice")
    index = api.client.app[RECALL].index
    await _batch(api, key, [f"Maintenance window {i} is on Tuesday at {i} am" for i in range(5)])
    await api.settle()

    async def followed() -> dict | None:
        _, health = await api.call("GET", "/health", key=None)
        served = health["serving_index"]
        return health if served["ready"] and served["position"] == health["projectors"]["memories"]["position"] \
            else None

    health = await eventually(followed, timeout_s=10, what="the serving index at the memories checkpoint")
    assert index.stats()["namespaces"]["alice-main"]["rows"] == 5
    assert health["serving_index"] == {"ready": True, "position": index.position}
