"""Shorthands for the four shapes of call the API has: a GET read, a POST read (a JSON query),
a write with an `Idempotency-Key` and a write without one."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..calls import Call
from ..retry import Kind

T = TypeVar("T")


def get(path: str, parse: Callable[[Any], T], query: Mapping[str, str] | None = None, *,
        after: str | None = None, waits: bool = True) -> Call[T]:
    """A GET read; `waits`: the endpoint takes `after=` (read-your-writes) as a query parameter."""
    return Call("GET", path, parse, Kind.READ, query=query or {}, after_in="query" if waits else None, after=after)


def post_read(path: str, parse: Callable[[Any], T], body: Mapping[str, Any], *, after: str | None = None) -> Call[T]:
    """A POST read (recall, graph queries): `after` goes in the body."""
    return Call("POST", path, parse, Kind.READ, body=body, after_in="body", after=after)


def keyed(method: str, path: str, parse: Callable[[Any], T], body: Mapping[str, Any] | None,
          idempotency_key: str | None) -> Call[T]:
    """A write the server deduplicates by `Idempotency-Key` (one is generated when not given)."""
    return Call(method, path, parse, Kind.KEYED_WRITE, body=body, idempotency_key=idempotency_key)


def action(path: str, parse: Callable[[Any], T], body: Mapping[str, Any] | None = None, *,
           after: str | None = None, waits: bool = False) -> Call[T]:
    """A POST write without an idempotency record (retried only when it certainly did nothing);
    `waits`: it takes `after=` in its body."""
    return Call("POST", path, parse, Kind.WRITE, body=body, after_in="body" if waits else None, after=after)
