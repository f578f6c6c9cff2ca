"""Logical digests: canonical rows, float rounding, vector tokens, order independence."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from projections.core.digest import Digester, canonical, digest_columns, digest_rows, row_bytes, vector_token


def test_floats_are_rounded_to_six_places_and_negative_zero_is_zero() -> None:
    assert canonical(0.1234564999) == 0.123456
    assert canonical(0.1234565001) == 0.123457
    assert canonical(-0.0000001) == 0.0
    assert row_bytes({"x": -0.0}) == row_bytes({"x": 0.0})


def test_float32_noise_does_not_change_a_row() -> None:
    a = {"importance": float(np.float32(0.7)), "quality": 0.5}
    b = {"importance": 0.7, "quality": 0.5000000001}
    assert row_bytes(a) == row_bytes(b)


def test_canonical_walks_nested_values_and_numpy() -> None:
    value = {"a": (1, 2.0000001), "b": [{"c": np.float32(1.5)}], "d": np.array([0.25, 1 / 3])}
    assert canonical(value) == {"a": [1, 2.0], "b": [{"c": 1.5}], "d": [0.25, 0.333333]}
    assert canonical(True) is True and canonical(None) is None and canonical("s") == "s"


def test_unsupported_values_are_refused() -> None:
    with pytest.raises(TypeError):
        canonical({"x": object()})


def test_row_bytes_do_not_depend_on_key_order() -> None:
    assert row_bytes({"a": 1, "b": "x"}) == row_bytes({"b": "x", "a": 1})
    assert row_bytes({"a": 1}) != row_bytes({"a": 2})


def test_digest_sorts_rows_by_key() -> None:
    rows = [{"id": "b", "v": 2}, {"id": "a", "v": 1}, {"id": "c", "v": 3}]
    assert digest_rows(rows, key="id") == digest_rows(list(reversed(rows)), key="id")
    assert digest_rows(rows, key="id") != digest_rows([*rows[:2], {"id": "c", "v": 4}], key="id")


def test_digester_matches_digest_rows_and_counts() -> None:
    rows = [{"id": "a", "x": 0.5}, {"id": "b", "x": 1.25}]
    d = Digester()
    for r in rows:
        d.add(r)
    assert d.rows == 2
    assert d.hexdigest() == digest_rows(rows)
    assert Digester().hexdigest() == hashlib.sha256(b"").hexdigest()


def test_precanonical_rows_hash_the_same() -> None:
    row = {"id": "a", "importance": canonical(0.30000001), "tags": ["x"]}
    d1, d2 = Digester(), Digester()
    d1.add(row)
    d2.add(row, canonicalize=False)
    assert d1.hexdigest() == d2.hexdigest()


def test_vector_token_is_model_and_content_sha() -> None:
    tok = vector_token("use-multilingual-v3", "你好")
    assert tok == ["use-multilingual-v3", hashlib.sha256("你好".encode()).hexdigest()]
    assert vector_token("other-model", "你好") != tok


def test_column_digests_round_floats_and_see_every_value() -> None:
    base = {"id": ["a", "b"], "score": [0.5, 0.25], "tags": [["x"], []]}
    same = {"tags": [["x"], []], "id": ["a", "b"], "score": [0.5000000001, 0.25]}
    assert digest_columns(base) == digest_columns(same)
    assert digest_columns(base) != digest_columns({**base, "tags": [["x"], ["y"]]})
    assert digest_columns(base) != digest_columns({**base, "id": ["b", "a"]})  # order is part of it
    assert digest_columns({"id": [], "x": []}) != digest_columns({"id": []})
    with pytest.raises(ValueError):
        digest_columns({"id": ["a"], "x": []})


def test_add_values_gives_the_bytes_of_add() -> None:
    import random

    from projections.core.digest import Digester

    rng = random.Random(7)
    pool = [None, 0, -3, 2**40, "", "节点", "a:b", 0.0, -0.0, 1e-9, -1e-9, 0.1234565, 2.5, 1 / 3, 7.0, [1.0000004, "x"]]
    for _ in range(500):
        row = tuple(rng.choice(pool) for _ in range(rng.randint(0, 8)))
        a, b = Digester(), Digester()
        a.add({"t": "edge", "v": list(row)})
        b.add_values("edge", row)
        assert a.hexdigest() == b.hexdigest(), row


def _chunked(values: list, sizes: list[int]):
    def chunks():
        lo = 0
        for size in sizes:
            yield values[lo:lo + size]
            lo += size
        yield values[lo:]
    return chunks


def test_column_chunks_digest_the_bytes_of_whole_columns() -> None:
    import random

    from projections.core.digest import digest_column_chunks

    rng = random.Random(5)
    n = 200
    columns = {
        "id": [f"m{i:04d}" for i in range(n)],
        "内容": [rng.choice(["部署脚本", "nginx \"quoted\"", "", "\\n"]) for _ in range(n)],
        "score": [round(rng.random(), 6) for _ in range(n)],
        "tags": [[rng.choice("xyz")] * rng.randrange(3) for _ in range(n)],
        "meta": [None if i % 3 else {"b": 1, "a": [1.5, None]} for i in range(n)],
        "Zeta": [i % 7 == 0 for i in range(n)],
    }
    want = digest_columns(columns, canonicalize=False)
    for sizes in ([n], [0, 0, 1, 199], [7] * 30, [1] * n, []):
        got = digest_column_chunks({name: _chunked(values, sizes) for name, values in columns.items()})
        assert got == want, sizes
    assert digest_column_chunks({"id": _chunked([], [])}) == digest_columns({"id": []})
    assert digest_column_chunks({name: _chunked(v, [9]) for name, v in {**columns, "score": columns["id"]}.items()}) != want
    with pytest.raises(ValueError):
        digest_column_chunks({"id": _chunked(["a"], []), "x": _chunked([], [])})


async def test_a_table_digested_column_by_column_is_the_sorted_table_digested_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow as pa

    from projections.core import lance_projection
    from projections.core.lance_projection import column_values, digest_by_column

    rng = np.random.default_rng(3)
    ids = [f"k{int(i):05d}" for i in rng.permutation(50)]
    table = pa.table({"id": ids, "x": rng.random(50), "tags": [["a"] * int(i % 3) for i in range(50)]})
    whole = table.sort_by("id")
    want = digest_columns({name: whole.column(name).to_pylist() for name in whole.schema.names})
    monkeypatch.setattr(lance_projection, "DIGEST_CHUNK", 7)
    scans: list[list[str]] = []

    async def scan(columns: list[str]) -> pa.Table:   # each scan in another row order: each is sorted by its own
        scans.append(columns)
        return table.select(columns).take(pa.array(rng.permutation(50)))

    columns = {name: ([name], column_values(name, canonical)) for name in table.schema.names}
    assert await digest_by_column(scan, "id", columns) == want
    assert scans == [["id"], ["id"], ["id", "tags"], ["id", "x"]]   # the key, then one column at a time, sorted

    async def same_order(columns: list[str]) -> pa.Table:
        return table.select(columns)
    assert await digest_by_column(same_order, "id", columns) == want
