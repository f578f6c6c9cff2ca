"""Tests of projections.models' embedders: the real USE model, the SQLite cache and the cache wrapper."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import numpy as np
import pytest

from projections.models.cached_embedder import CachedEmbedder
from projections.models.embedding import Embedder, EmbeddingError, make_embedder
from projections.models.embedding_cache import EmbeddingCache, content_sha
from projections.models.http_embedder import HttpEmbedder
from projections.models.use_embedder import LocalUSEEmbedder


@pytest.fixture(scope="module")
def use() -> LocalUSEEmbedder:
    return LocalUSEEmbedder(threads=1)


class CountingEmbedder:
    """A real (deterministic, hash-based) embedder that records what it was asked to embed."""

    model_id = "test-hash-v1"
    dim = 8

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = []
        for t in texts:
            digest = hashlib.sha256(t.encode("utf-8")).digest()
            v = np.frombuffer(digest[: self.dim * 4], dtype=np.uint32).astype(np.float32) + 1.0
            rows.append(v / np.linalg.norm(v))
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


# ---------------------------------------------------------------- LocalUSEEmbedder


def test_use_shape_dtype_and_norms(use: LocalUSEEmbedder) -> None:
    texts = ["hello world", "你好，世界", "a third sentence about memory", ""]
    vecs = use.embed(texts)
    assert use.model_id == "use-multilingual-v3"
    assert use.dim == 512
    assert vecs.shape == (4, 512)
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)


def test_use_empty_input(use: LocalUSEEmbedder) -> None:
    vecs = use.embed([])
    assert vecs.shape == (0, 512)
    assert vecs.dtype == np.float32


def test_use_is_an_embedder(use: LocalUSEEmbedder) -> None:
    assert isinstance(use, Embedder)


@pytest.mark.parametrize(
    ("anchor", "related", "unrelated"),
    [
        ("我喜欢吃苹果", "苹果是我最喜欢的水果", "明天的会议改到下午三点"),
        ("The cat sat on the mat", "A kitten is sitting on the rug", "Quarterly revenue grew by ten percent"),
        ("数据库连接超时", "the database connection timed out", "我今天去公园散步"),
    ],
)
def test_use_semantic_similarity(use: LocalUSEEmbedder, anchor: str, related: str, unrelated: str) -> None:
    a, r, u = use.embed([anchor, related, unrelated])
    assert _cos(a, r) > _cos(a, u) + 0.2


def test_use_deterministic_and_batch_independent(use: LocalUSEEmbedder) -> None:
    alone = use.embed(["用户偏好深色主题"])[0]
    batched = use.embed(["something else entirely", "用户偏好深色主题"])[1]
    np.testing.assert_allclose(alone, batched, atol=1e-5)


def test_use_lazy_load_is_thread_safe() -> None:
    emb = LocalUSEEmbedder(threads=1)
    assert emb._use is None  # nothing loaded at construction
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def worker(text: str) -> None:
        try:
            results.append(emb.embed([text]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(f"text {i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 4 and all(r.shape == (1, 512) for r in results)


# ---------------------------------------------------------------- content_sha


def test_content_sha() -> None:
    assert content_sha("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert content_sha("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert content_sha("织忆") == hashlib.sha256("织忆".encode()).hexdigest()
    assert len(content_sha("x")) == 64


# ---------------------------------------------------------------- EmbeddingCache


def test_cache_round_trip_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "embeddings.sqlite"
    rng = np.random.default_rng(0)
    vecs = {content_sha(f"t{i}"): rng.standard_normal(16).astype(np.float32) for i in range(1200)}

    cache = EmbeddingCache(path)
    cache.put_many("model-a", vecs)
    cache.close()
    cache.close()  # idempotent

    reopened = EmbeddingCache(path)
    try:
        assert reopened.count("model-a") == 1200
        got = reopened.get_many("model-a", list(vecs) + ["0" * 64])  # > 500: several chunks
        assert set(got) == set(vecs)
        for sha, v in vecs.items():
            assert got[sha].dtype == np.float32
            np.testing.assert_array_equal(got[sha], v)
        got[next(iter(got))][0] = 1.0  # returned arrays are writable copies
        # keyed by model too
        assert reopened.get_many("model-b", list(vecs)[:10]) == {}
        assert reopened.get_many("model-a", []) == {}
    finally:
        reopened.close()
    with pytest.raises(RuntimeError):
        reopened.get_many("model-a", ["x"])


def test_cache_insert_or_ignore(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path / "c.sqlite") as cache:
        sha = content_sha("same")
        cache.put_many("m", {sha: np.ones(4, dtype=np.float32)})
        cache.put_many("m", {sha: np.zeros(4, dtype=np.float32)})
        cache.put_many("m", {})
        np.testing.assert_array_equal(cache.get_many("m", [sha])[sha], np.ones(4, dtype=np.float32))
        assert cache.count() == 1


def test_cache_usable_from_another_thread(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    out: dict[str, np.ndarray] = {}
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            sha = content_sha(f"w{i}")
            cache.put_many("m", {sha: np.full(4, i, dtype=np.float32)})
            out.update(cache.get_many("m", [sha]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cache.close()
    assert not errors
    assert len(out) == 8


def test_cache_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with EmbeddingCache(path) as cache:
        mode = cache._connection().execute("PRAGMA journal_mode").fetchone()[0]
    assert mode.lower() == "wal"


# ---------------------------------------------------------------- CachedEmbedder


def test_cached_embedder_hits_misses_order_and_duplicates(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    emb = CachedEmbedder(inner, cache)
    assert emb.model_id == "test-hash-v1" and emb.dim == 8

    texts = ["a", "b", "a", "c", "b"]
    vecs = emb.embed(texts)
    assert vecs.shape == (5, 8) and vecs.dtype == np.float32
    assert inner.calls == [["a", "b", "c"]]  # misses deduplicated, one inner call
    assert (emb.hits, emb.misses) == (0, 3)
    expected = inner.embed(texts)
    inner.calls.clear()
    np.testing.assert_allclose(vecs, expected, atol=1e-6)

    vecs2 = emb.embed(["c", "d", "a", "d"])
    assert inner.calls == [["d"]]
    assert (emb.hits, emb.misses) == (2, 4)
    np.testing.assert_allclose(vecs2, CountingEmbedder().embed(["c", "d", "a", "d"]), atol=1e-6)

    inner.calls.clear()
    emb.embed(["a", "b"])
    assert inner.calls == []  # all hits, inner not called
    assert (emb.hits, emb.misses) == (4, 4)
    emb.close()

    # a fresh process (new cache object on the same file) still hits
    inner2 = CountingEmbedder()
    emb2 = CachedEmbedder(inner2, EmbeddingCache(tmp_path / "c.sqlite"))
    np.testing.assert_allclose(emb2.embed(["d", "c"]), vecs2[[1, 0]], atol=1e-6)
    assert inner2.calls == [] and emb2.hits == 2
    emb2.close()


def test_cached_embedder_without_cache() -> None:
    inner = CountingEmbedder()
    emb = CachedEmbedder(inner, None)
    out = emb.embed(["x", "x", "y"])
    assert inner.calls == [["x", "y"]]
    np.testing.assert_array_equal(out[0], out[1])
    emb.embed(["x"])
    assert (emb.hits, emb.misses) == (0, 3)
    assert emb.embed([]).shape == (0, 8)


def test_cached_embedder_cache_is_per_model(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    first = CountingEmbedder()
    CachedEmbedder(first, cache).embed(["shared text"])

    other = CountingEmbedder()
    other.model_id = "test-hash-v2"
    CachedEmbedder(other, cache).embed(["shared text"])
    assert other.calls == [["shared text"]]
    cache.close()


def test_cached_embedder_rejects_wrong_row_count() -> None:
    class Broken(CountingEmbedder):
        def embed(self, texts: list[str]) -> np.ndarray:
            return super().embed(texts)[:-1]

    with pytest.raises(EmbeddingError):
        CachedEmbedder(Broken(), None).embed(["a", "b"])


def test_cached_embedder_with_real_use(tmp_path: Path, use: LocalUSEEmbedder) -> None:
    emb = CachedEmbedder(use, EmbeddingCache(tmp_path / "c.sqlite"))
    first = emb.embed(["记住用户喜欢绿茶", "remember the user likes green tea"])
    again = emb.embed(["remember the user likes green tea", "记住用户喜欢绿茶"])
    np.testing.assert_array_equal(first[::-1], again)
    assert (emb.hits, emb.misses) == (2, 2)
    emb.close()


# ---------------------------------------------------------------- make_embedder


def test_make_embedder_local_with_cache(tmp_path: Path) -> None:
    emb = make_embedder(
        bge_endpoint=None, bge_api_key=None, bge_model=None, cache_path=str(tmp_path / "x" / "c.sqlite")
    )
    assert isinstance(emb, CachedEmbedder)
    assert isinstance(emb.inner, LocalUSEEmbedder)
    assert emb.model_id == "use-multilingual-v3" and emb.dim == 512
    assert emb.cache is not None and (tmp_path / "x" / "c.sqlite").exists()
    emb.close()


def test_make_embedder_http_without_cache() -> None:
    emb = make_embedder(
        bge_endpoint="http://127.0.0.1:9/", bge_api_key="k", bge_model=None, cache_path=None
    )
    assert isinstance(emb.inner, HttpEmbedder)
    assert emb.cache is None
    assert emb.model_id == "http:bge-m3"
    assert emb.inner.url == "http://127.0.0.1:9/v1/embeddings"


@pytest.mark.parametrize(
    ("endpoint", "url"),
    [
        ("http://h:8000", "http://h:8000/v1/embeddings"),
        ("http://h:8000/", "http://h:8000/v1/embeddings"),
        ("http://h:8000/v1", "http://h:8000/v1/embeddings"),
        ("http://h:8000/v1/embeddings", "http://h:8000/v1/embeddings"),
        ("https://h/prefix/v1/embeddings/", "https://h/prefix/v1/embeddings"),
    ],
)
def test_http_endpoint_forms(endpoint: str, url: str) -> None:
    assert HttpEmbedder(endpoint).url == url
