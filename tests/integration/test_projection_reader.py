"""MemoriesReader and RecallService over a projected LanceDB table."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from events.catalogue import MemoryCommitted, MemoryDeleted, new_event
from projections.models.embedding import make_embedder
from projections.core.errors import InvalidQuery
from tests.hash_embedder import HashEmbedder
from projections.memories.projector import MemoriesProjector
from projections.queries.recall.service import RecallHit, RecallRequest, RecallService
from projections.memories.reader import MemoriesReader
from projections.core.runner import ProjectionRunner


def commit(mid: str, content: str, ns: str, **kw):
    return new_event(MemoryCommitted(mid, content, ns, kw.pop("category", "fact"), "system_fact", **kw), ns=ns,
                     agent="alice")


def delete(mid: str, ns: str):
    return new_event(MemoryDeleted(mid, ns, 2, "obsolete"), ns=ns, agent="alice")


async def project(store, directory: Path, embedder) -> None:
    p = MemoriesProjector(directory, embedder)
    await ProjectionRunner(store, p, publish=False).catch_up()
    await p.close()


@pytest.fixture(scope="module")
def use_embedder():
    """The real default model (USE multilingual, 512-d), loaded once for this module."""
    return make_embedder(bge_endpoint=None, bge_api_key=None, bge_model=None, cache_path=None)


def test_an_absent_table_reads_as_empty(tmp_path: Path) -> None:
    reader = MemoriesReader(tmp_path / "nothing-here")
    assert reader.search(np.ones(16, dtype=np.float32), ["shared"], 5) == []
    assert reader.get("m1") is None
    assert reader.count_by_namespace() == {} and reader.count() == 0


async def test_search_prefilters_namespaces_and_drops_deleted_rows(store, tmp_path: Path) -> None:
    emb = HashEmbedder(dim=16)
    await store.append([commit("a1", "alpha one", "alice-main"), commit("a2", "alpha two", "alice-main"),
                        commit("b1", "bravo one", "bob-main"), commit("s1", "shared one", "shared"),
                        commit("s2", "shared two", "shared")])
    await store.append([delete("a2", "alice-main")])
    await project(store, tmp_path, emb)
    reader = MemoriesReader(tmp_path)

    hits = reader.search(emb.vector("alpha two"), ["alice-main", "shared"], 10)
    assert {h["id"] for h in hits} == {"a1", "s1", "s2"}  # a2 deleted, b1 in another namespace
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert all(-1.0 <= h["score"] <= 1.0 for h in hits)
    assert "vector" not in hits[0] and "version_history" not in hits[0]

    exact = reader.search(emb.vector("bravo one"), ["bob-main"], 3)
    assert [h["id"] for h in exact] == ["b1"] and exact[0]["score"] == pytest.approx(1.0, abs=1e-5)
    assert len(reader.search(emb.vector("x"), ["alice-main", "bob-main", "shared"], 2)) == 2
    assert reader.search(emb.vector("x"), ["nobody-main"], 5) == []


async def test_get_counts_and_stats(store, tmp_path: Path) -> None:
    emb = HashEmbedder(dim=16)
    await store.append([commit("a1", "alpha", "alice-main", tags=("x", "y"), depends_on=("s1",)),
                        commit("a2", "alpha 2", "alice-main"), commit("s1", "shared", "shared")])
    await store.append([delete("a2", "alice-main")])
    await project(store, tmp_path, emb)
    reader = MemoriesReader(tmp_path)
    a1, a2 = reader.get("a1"), reader.get("a2")
    assert a1["tags"] == ["x", "y"] and a1["depends_on"] == ["s1"] and a1["version_history"][0]["version"] == 1
    assert a2["is_deleted"] is True and a2["version"] == 2
    assert reader.get("missing") is None and reader.get("it's") is None  # quotes are escaped
    assert reader.count_by_namespace() == {"alice-main": 1, "shared": 1}
    assert reader.count() == 2


async def test_ids_with_quotes_survive_projection_and_lookup(store, tmp_path: Path) -> None:
    emb = HashEmbedder(dim=16)
    await store.append([commit("o'brien", "quoted id", "shared")])
    await store.append([delete("o'brien", "shared")])
    await project(store, tmp_path, emb)
    assert MemoriesReader(tmp_path).get("o'brien")["is_deleted"] is True


@pytest.mark.parametrize("bad", ["", "a b", "x' OR '1'='1", "-leading", "ns;drop", "n" * 129])
def test_namespaces_are_validated(tmp_path: Path, bad: str) -> None:
    with pytest.raises(InvalidQuery):
        MemoriesReader(tmp_path).search(np.ones(4, dtype=np.float32), ["shared", bad], 5)


async def test_a_reader_sees_new_versions_without_reopening(store, tmp_path: Path) -> None:
    emb = HashEmbedder(dim=16)
    await store.append([commit("a1", "first", "shared")])
    p = MemoriesProjector(tmp_path, emb)
    runner = ProjectionRunner(store, p, publish=False)
    await runner.catch_up()
    reader = MemoriesReader(tmp_path)
    assert reader.count() == 1
    await store.append([commit("a2", "second", "shared")])
    await runner.catch_up()
    assert reader.count() == 2 and reader.get("a2") is not None
    await p.close()


async def test_recall_with_the_real_model(store, tmp_path: Path, use_embedder) -> None:
    await store.append([
        commit("pref", "The user prefers dark mode in every editor", "alice-main", category="preference"),
        commit("deploy", "Run database migrations before restarting the workers", "shared", tags=("ops",)),
        commit("zh", "用户喜欢喝绿茶，不喜欢咖啡", "shared"),
        commit("other", "Bob's favourite colour theme is solarized light", "bob-main"),
    ])
    await project(store, tmp_path, use_embedder)
    service = RecallService(MemoriesReader(tmp_path), use_embedder)

    hits = await service.recall(RecallRequest("which colour theme does the user like?", ["alice-main", "shared"],
                                              diversity=0.0))
    assert hits[0] == RecallHit(memory_id="pref", content="The user prefers dark mode in every editor",
                                score=hits[0].score, namespace="alice-main", category="preference", tags=[],
                                source="agent_inference", version=1, timestamp=hits[0].timestamp,
                                freshness="fresh", similarity=hits[0].similarity, importance=hits[0].importance,
                                confidence=0.5)
    assert hits[0].importance == pytest.approx(1.0, abs=1e-3)   # just committed, never recalled
    assert 0.2 < hits[0].similarity < 1.0
    assert "other" not in {h.memory_id for h in hits}  # bob-main was not asked for
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    tea = await service.recall(RecallRequest("what does the user drink?", ["shared"], top_k=1))
    assert [h.memory_id for h in tea] == ["zh"]  # cross-lingual: English query, Chinese memory

    strict = await service.recall(RecallRequest("database migrations before restart", ["alice-main", "shared"],
                                                min_score=0.5))
    assert [h.memory_id for h in strict] == ["deploy"] and strict[0].tags == ["ops"]
    assert await service.recall(RecallRequest("anything", ["shared"], min_score=0.99)) == []


async def test_recall_validates_requests(tmp_path: Path) -> None:
    service = RecallService(MemoriesReader(tmp_path), HashEmbedder(dim=8))
    for bad in (RecallRequest("", ["shared"]), RecallRequest("q", ["shared"], top_k=0),
                RecallRequest("q", ["bad ns"]), RecallRequest("q", ["shared"], min_score=2.0)):
        with pytest.raises(InvalidQuery):
            await service.recall(bad)
    assert await service.recall(RecallRequest("q", [])) == []
    assert await asyncio.wait_for(service.recall(RecallRequest("q", ["shared"])), 5) == []
