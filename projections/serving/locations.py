"""Where each memory of the serving index lives: its namespace and slot (`Locations`), and the
slots a first load gives the rows it reads (`slots_by_commit`)."""

from __future__ import annotations

import sys

import pyarrow as pa

from events import positions

__all__ = ["Locations", "slots_by_commit"]


class Locations:
    """memory id -> (namespace, slot), each held as one int (namespace number << 32 | slot): a
    tuple per memory would cost 56 bytes more."""

    __slots__ = ("_at", "_names", "_numbers")

    def __init__(self) -> None:
        self._at: dict[str, int] = {}
        self._names: list[str] = []
        self._numbers: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._at)

    def get(self, memory_id: str) -> tuple[str, int] | None:
        at = self._at.get(memory_id)
        return None if at is None else (self._names[at >> 32], at & 0xFFFFFFFF)

    def pop(self, memory_id: str) -> tuple[str, int] | None:
        at = self._at.pop(memory_id, None)
        return None if at is None else (self._names[at >> 32], at & 0xFFFFFFFF)

    def __getitem__(self, memory_id: str) -> tuple[str, int]:
        at = self.get(memory_id)
        if at is None:
            raise KeyError(memory_id)
        return at

    def __setitem__(self, memory_id: str, at: tuple[str, int]) -> None:
        number = self._numbers.get(at[0])
        if number is None:
            number = self._numbers[at[0]] = len(self._names)
            self._names.append(at[0])
        self._at[memory_id] = number << 32 | at[1]


def slots_by_commit(keys: pa.Table, upto: tuple[int, int]) -> dict[str, list[str]]:
    """Per namespace, the ids of the rows at or before `upto`, in commit order (their slots); the ids
    interned, so that the gateway's followers (recall counts, prefetch partners) share them."""
    stamped = [(positions.key(p), sys.intern(mid), ns) for mid, ns, p in zip(keys.column("id").to_pylist(),
                                                                 keys.column("namespace").to_pylist(),
                                                                 keys.column("position").to_pylist())]
    stamped.sort()
    out: dict[str, list[str]] = {}
    for key, mid, ns in stamped:
        if key <= upto:
            out.setdefault(ns, []).append(mid)
    return out
