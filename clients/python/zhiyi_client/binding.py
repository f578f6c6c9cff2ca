"""How one list of endpoints serves both clients.

Each endpoint is a function building a `Call`; `endpoint(fn)` makes it a method. Read from an
`AsyncRunner` (`AsyncZhiyi`) the method returns an awaitable of the result, read from a
`SyncRunner` (`Zhiyi`) it returns the result: both types are spelled out to type checkers by the
overloads of `__get__`, with the endpoint's own parameters (`ParamSpec`).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, Generic, ParamSpec, TypeVar, overload

from .calls import Call

P = ParamSpec("P")
T = TypeVar("T")


class AsyncRunner:
    """Base of the async client: runs a `Call` and returns an awaitable result."""

    async def _execute(self, call: Call[T]) -> T:
        raise NotImplementedError


class SyncRunner:
    """Base of the sync client: runs a `Call` and returns its result."""

    def _execute(self, call: Call[T]) -> T:
        raise NotImplementedError


class endpoint(Generic[P, T]):  # noqa: N801 (used like a decorator)
    """A method built from an endpoint function `build(*args) -> Call[T]`."""

    def __init__(self, build: Callable[P, Call[T]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> endpoint[P, T]: ...

    @overload
    def __get__(self, obj: AsyncRunner, owner: type | None = None) -> Callable[P, Awaitable[T]]: ...

    @overload
    def __get__(self, obj: SyncRunner, owner: type | None = None) -> Callable[P, T]: ...

    def __get__(self, obj: AsyncRunner | SyncRunner | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        build = self.build
        run = obj._execute

        @functools.wraps(build)
        def method(*args: P.args, **kwargs: P.kwargs) -> Any:
            return run(build(*args, **kwargs))

        return method
