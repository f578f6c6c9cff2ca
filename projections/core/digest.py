"""Logical digests of projections (DESIGN §1).

A digest is a sha256 (hex) over canonical orjson of the rows sorted by key: either row by
row (`Digester`, `digest_rows`: one row per line, keys sorted) or, for columnar stores, column
by column (`digest_columns`: every column's values in key order; `ColumnDigester` takes them a chunk
at a time, for tables too big to hold as Python lists: the same digest). Floats are rounded to 6
places; vectors are stood for by ``[model, sha256(content)]`` so that a digest says "same
rows, same inputs to the same model" without depending on the float noise of an embedding run.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Iterable, Mapping

import orjson

FLOAT_PLACES = 6
_OPTS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def vector_token(model: str, content: str) -> list[str]:
    """What a vector is replaced by in a digest: its model and the sha256 of its input text."""
    return [model, hashlib.sha256(content.encode("utf-8")).hexdigest()]


def canonical(value: Any) -> Any:
    """Round floats (recursively) so that equal logical values serialise identically."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is float:
        r = round(value, FLOAT_PLACES)
        return 0.0 if r == 0 else r  # -0.0 and 0.0 are the same value
    if t is list or t is tuple:
        return [canonical(v) for v in value]
    if t is dict:
        return {k if type(k) is str else str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, (str, int)):  # bool is an int; subclasses such as IntEnum
        return value
    if isinstance(value, float):
        return canonical(float(value))
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return canonical(value.tolist())
    raise TypeError(f"cannot digest a {type(value).__name__}")


def row_bytes(row: Mapping[str, Any], *, canonicalize: bool = True) -> bytes:
    """The canonical serialisation of one row (keys sorted, floats rounded).

    `canonicalize=False` is for callers that already rounded every float of the row.
    """
    return orjson.dumps(canonical(row) if canonicalize else row, option=_OPTS)


class Digester:
    """Incremental digest: feed rows already sorted by key, then read `hexdigest()`."""

    def __init__(self) -> None:
        self._h = hashlib.sha256()
        self.rows = 0

    def add(self, row: Mapping[str, Any], *, canonicalize: bool = True) -> None:
        self._h.update(row_bytes(row, canonicalize=canonicalize))
        self._h.update(b"\n")
        self.rows += 1

    def add_values(self, tag: str, values: Iterable[Any]) -> None:
        """`add({"t": tag, "v": list(values)})`, the same bytes, for a row of SQL values: floats
        rounded here, strings, ints and None as they are (anything else through `canonical`),
        without `canonical`'s walk of the dict (a graph digest feeds ~750k rows at 100k events)."""
        out: list[Any] = []
        for x in values:
            t = type(x)
            if t is float:
                r = round(x, FLOAT_PLACES)
                out.append(0.0 if r == 0 else r)
            elif t is str or t is int or x is None:
                out.append(x)
            else:
                out.append(canonical(x))
        self.add({"t": tag, "v": out}, canonicalize=False)

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def digest_rows(rows: Iterable[Mapping[str, Any]], key: str | None = None) -> str:
    """Digest rows; when `key` is given they are sorted by that column first."""
    items = sorted(rows, key=lambda r: r[key]) if key else rows
    d = Digester()
    for r in items:
        d.add(r)
    return d.hexdigest()


def digest_columns(columns: Mapping[str, list[Any]], *, canonicalize: bool = True) -> str:
    """Digest a table given as {column: values in key order} (all columns the same length).

    `canonicalize=False` is for callers that already rounded the floats (faster: one dump).
    """
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise ValueError(f"columns of different lengths: {sorted(lengths)}")
    doc = {name: canonical(values) if canonicalize else values for name, values in columns.items()}
    return hashlib.sha256(orjson.dumps(doc, option=_OPTS)).hexdigest()


class ColumnDigester:
    """`digest_columns(..., canonicalize=False)` of the same values, never holding a whole column: feed
    every column of `names` in sorted order (`names` is that order), each as lists of its values
    (floats already rounded) in key order. The same bytes are hashed: orjson's `{"name":[v,...],...}`,
    keys sorted, each list's `[...]` without its brackets, joined by commas (a 1M-row table digested
    whole held ~30M Python values, several GB)."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = sorted(names)
        self._h = hashlib.sha256(b"{")
        self._fed = 0
        self._lengths: set[int] = set()

    def add(self, name: str, chunks: Iterable[list[Any]]) -> None:
        if self._fed >= len(self.names) or name != self.names[self._fed]:
            raise ValueError(f"column {name!r} out of order: expected {self.names[self._fed:self._fed + 1]}")
        h = self._h
        h.update(b"," if self._fed else b"")
        h.update(orjson.dumps(name))
        h.update(b":[")
        count = 0
        for chunk in chunks:
            if chunk:
                h.update(b"," if count else b"")
                h.update(orjson.dumps(chunk, option=_OPTS)[1:-1])
                count += len(chunk)
        h.update(b"]")
        self._lengths.add(count)
        self._fed += 1

    def hexdigest(self) -> str:
        if self._fed != len(self.names):
            raise ValueError(f"columns not fed: {self.names[self._fed:]}")
        if len(self._lengths) > 1:
            raise ValueError(f"columns of different lengths: {sorted(self._lengths)}")
        h = self._h.copy()
        h.update(b"}")
        return h.hexdigest()


def digest_column_chunks(columns: Mapping[str, Callable[[], Iterable[list[Any]]]]) -> str:
    """`ColumnDigester` over `columns`: each column's function gives its lists of values."""
    d = ColumnDigester(columns)
    for name in d.names:
        d.add(name, columns[name]())
    return d.hexdigest()
