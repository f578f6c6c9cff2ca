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
