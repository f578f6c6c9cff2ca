"""The embedding cache's compact store: vectors in a flat float32 file per model, a small SQLite
index; the first format (a blob per row) migrated on open and written back out for backups;
CRC-checked rows; several writer processes at once."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from projections.models.embedding_cache import LEGACY_TABLE, EmbeddingCache, content_sha, export_blobs

DIM = 16


def vec(text: str, dim: int = DIM) -> np.ndarray:
    seed = int(content_sha(text)[:12], 16)
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


def legacy_file(path: Path, items: dict[str, list[str]]) -> None:
    """A cache in the first format: {model: texts}."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA page_size=16384")
    conn.execute(f"CREATE TABLE {LEGACY_TABLE} (model TEXT NOT NULL, sha TEXT NOT NULL, vec BLOB NOT NULL, "
                 "PRIMARY KEY (model, sha)) WITHOUT ROWID")
    conn.executemany(f"INSERT INTO {LEGACY_TABLE} VALUES (?, ?, ?)",
                     [(m, content_sha(t), vec(t).tobytes()) for m, texts in items.items() for t in texts])
    conn.commit()
    conn.close()


def test_vectors_live_in_a_flat_file_indexed_by_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite"
    texts = [f"t{i}" for i in range(3000)]
    with EmbeddingCache(path) as cache:
        cache.put_many("m", {content_sha(t): vec(t) for t in texts[:1700]})
        cache.put_many("m", {content_sha(t): vec(t) for t in texts[1000:]})   # 700 already there
        got = cache.get_many("m", [content_sha(t) for t in texts])
        assert cache.count("m") == 3000 == cache.count()
    files = list(tmp_path.glob("embeddings.*.f32"))
    assert len(files) == 1 and files[0].stat().st_size == 3000 * DIM * 4   # each vector once, nothing else
    assert all(np.array_equal(got[content_sha(t)], vec(t)) for t in texts)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT length(sha) FROM vectors LIMIT 1").fetchone() == (32,)   # raw sha256 bytes
    conn.close()


def test_dimension_is_fixed_per_model(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path / "c.sqlite") as cache:
        cache.put_many("m", {content_sha("a"): vec("a")})
        with pytest.raises(ValueError):
            cache.put_many("m", {content_sha("b"): vec("b", 8)})
        cache.put_many("other", {content_sha("b"): vec("b", 8)})   # another model, its own file and dim
        assert cache.get_many("other", [content_sha("b")])[content_sha("b")].shape == (8,)
        assert cache.get_many("m", [content_sha("b")]) == {}


def has_legacy_table(path: Path) -> bool:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (LEGACY_TABLE,)).fetchone() is not None
    finally:
        conn.close()


def test_first_format_is_migrated_on_first_use(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite"
    texts = {"use": [f"u{i}" for i in range(4500)], "bge": ["x", "y"]}
    legacy_file(path, texts)
    before = path.stat().st_size
    with EmbeddingCache(path) as cache:
        assert has_legacy_table(path)   # opening (on the event loop, say) moves nothing
        assert cache.count() == 4502    # the first use (a worker thread) does
        assert not has_legacy_table(path)
        for model, ts in texts.items():
            got = cache.get_many(model, [content_sha(t) for t in ts])
            assert all(np.array_equal(got[content_sha(t)], vec(t)) for t in ts)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (LEGACY_TABLE,)).fetchone() is None
    conn.close()
    assert path.stat().st_size < before / 2   # the blobs moved out (VACUUM gave the pages back)
    with EmbeddingCache(path) as again:   # reopening migrates nothing more
        assert again.count("use") == 4500


def test_first_format_rows_are_read_while_they_last(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with EmbeddingCache(path) as cache:
        cache.put_many("m", {content_sha("new"): vec("new")})
        conn = sqlite3.connect(path)   # e.g. another process still migrating: old rows appear
        conn.execute(f"CREATE TABLE {LEGACY_TABLE} (model TEXT, sha TEXT, vec BLOB, PRIMARY KEY (model, sha))")
        conn.execute(f"INSERT INTO {LEGACY_TABLE} VALUES ('m', ?, ?)", (content_sha("old"), vec("old").tobytes()))
        conn.commit()
        conn.close()
        cache._legacy = True
        got = cache.get_many("m", [content_sha("new"), content_sha("old"), content_sha("none")])
        assert set(got) == {content_sha("new"), content_sha("old")}
        np.testing.assert_array_equal(got[content_sha("old")], vec("old"))


def test_a_row_whose_bytes_are_lost_reads_as_missing_and_is_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    texts = [f"t{i}" for i in range(10)]
    with EmbeddingCache(path) as cache:
        cache.put_many("m", {content_sha(t): vec(t) for t in texts})
    (vectors,) = tmp_path.glob("c.*.f32")
    with open(vectors, "r+b") as fh:   # a power loss: the index committed, row 3's bytes not written
        fh.seek(3 * DIM * 4)
        fh.write(b"\0" * DIM * 4)
        fh.truncate(8 * DIM * 4)       # and rows 8, 9 never reached the file
    with EmbeddingCache(path) as cache:
        got = cache.get_many("m", [content_sha(t) for t in texts])
        assert set(got) == {content_sha(t) for i, t in enumerate(texts) if i not in (3, 8, 9)}
        cache.put_many("m", {content_sha(t): vec(t) for t in texts})   # the misses, embedded again
        got = cache.get_many("m", [content_sha(t) for t in texts])
        assert len(got) == 10 and all(np.array_equal(got[content_sha(t)], vec(t)) for t in texts)


def test_export_writes_the_first_format_which_opens_as_a_cache(tmp_path: Path) -> None:
    path = tmp_path / "live" / "embeddings.sqlite"
    texts = [f"e{i}" for i in range(1200)]
    with EmbeddingCache(path) as cache:
        cache.put_many("m", {content_sha(t): vec(t) for t in texts})
        cache.put_many("n", {"not-a-sha": vec("z")})
        dest = tmp_path / "archive.sqlite"
        assert export_blobs(path, dest) == 1201   # while the cache is open
    conn = sqlite3.connect(dest)
    assert conn.execute(f"SELECT count(*) FROM {LEGACY_TABLE}").fetchone() == (1201,)
    conn.close()
    with EmbeddingCache(dest) as restored:
        got = restored.get_many("m", [content_sha(t) for t in texts])
        assert all(np.array_equal(got[content_sha(t)], vec(t)) for t in texts)
        np.testing.assert_array_equal(restored.get_many("n", ["not-a-sha"])["not-a-sha"], vec("z"))


def _writer(path: str, start: int, rounds: int) -> None:
    cache = EmbeddingCache(path)
    try:
        for r in range(rounds):
            texts = [f"w{start + r * 20 + i}" for i in range(40)]   # overlaps its next round and other writers
            cache.put_many("m", {content_sha(t): vec(t) for t in texts})
            got = cache.get_many("m", [content_sha(t) for t in texts])
            assert len(got) == 40 and all(np.array_equal(got[content_sha(t)], vec(t)) for t in texts)
    finally:
        cache.close()


def test_writer_processes_at_once_store_each_vector_once(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite"
    EmbeddingCache(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), start, 15)) for start in (0, 100, 150, 200)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    expected = {f"w{s + r * 20 + i}" for s in (0, 100, 150, 200) for r in range(15) for i in range(40)}
    with EmbeddingCache(path) as cache:
        assert cache.count("m") == len(expected)
        got = cache.get_many("m", [content_sha(t) for t in expected])
        assert all(np.array_equal(got[content_sha(t)], vec(t)) for t in expected)
    (vectors,) = tmp_path.glob("embeddings.*.f32")
    assert vectors.stat().st_size == len(expected) * DIM * 4
