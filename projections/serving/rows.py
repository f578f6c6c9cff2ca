"""The result columns of one namespace's rows, by slot, in one byte arena.

A Python dict per row (21 columns) costs about 1.7 KB; here each row is one `marshal` record of
its values in `ROW_COLUMNS` order (a list: no key names; `id` and `namespace` are the slot's and
the partition's own), appended to a `bytearray`, about 150 bytes plus the content. A row is
decoded only when a recall returns it. A row of other columns (tests build rows of just `id`
and `content`) is stored as its dict.

A replaced or removed row leaves its bytes behind as garbage; the arena is rewritten once the
garbage outweighs the live bytes (and 1 MiB), which costs one pass over the live records.
"""

from __future__ import annotations

import marshal
from array import array
from typing import Any

from projections.memories.reader import RESULT_COLUMNS

__all__ = ["ROW_COLUMNS", "RowArena"]

#: The memories reader's RESULT_COLUMNS without the two the partition knows (id, namespace).
ROW_COLUMNS = tuple(c for c in RESULT_COLUMNS if c not in ("id", "namespace"))
_KEYS = frozenset(ROW_COLUMNS) | {"id", "namespace"}
_MIN_GARBAGE = 1 << 20


class RowArena:
    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self._data = bytearray()
        self._start = array("q")   # by slot: offset of its record; -1 when removed
        self._end = array("q")
        self._garbage = 0

    def __len__(self) -> int:
        return len(self._start)

    @property
    def nbytes(self) -> int:
        return len(self._data) + 16 * len(self._start)

    def append(self, row: dict[str, Any]) -> int:
        """Store a new slot's row; returns the slot (slots are consecutive)."""
        start = len(self._data)
        self._data += _encode(row)
        self._start.append(start)
        self._end.append(len(self._data))
        return len(self._start) - 1

    def reserve(self, slots: int) -> None:
        """Make room for `slots` slots, to be filled by :meth:`put` in any order."""
        assert not self._start
        self._start.extend([-1] * slots)
        self._end.extend([-1] * slots)

    def put(self, slot: int, row: dict[str, Any]) -> None:
        start = len(self._data)
        self._data += _encode(row)
        self._start[slot], self._end[slot] = start, len(self._data)

    def replace(self, slot: int, row: dict[str, Any]) -> None:
        self._garbage += self._end[slot] - self._start[slot]
        start = len(self._data)
        self._data += _encode(row)
        self._start[slot], self._end[slot] = start, len(self._data)
        self._maybe_rewrite()

    def remove(self, slot: int) -> None:
        if self._start[slot] >= 0:
            self._garbage += self._end[slot] - self._start[slot]
            self._start[slot] = self._end[slot] = -1
            self._maybe_rewrite()

    def get(self, slot: int, row_id: str) -> dict[str, Any] | None:
        start = self._start[slot]
        if start < 0:
            return None
        values = marshal.loads(memoryview(self._data)[start:self._end[slot]])
        if isinstance(values, dict):
            return values
        row = dict(zip(ROW_COLUMNS, values))
        row["id"] = row_id
        row["namespace"] = self.namespace
        return row

    def content(self, slot: int) -> str | None:
        row = self.get(slot, "")
        return None if row is None else row.get("content")

    def _maybe_rewrite(self) -> None:
        live = len(self._data) - self._garbage
        if self._garbage < _MIN_GARBAGE or self._garbage < live:
            return
        data = bytearray()
        view = memoryview(self._data)
        for slot, start in enumerate(self._start):
            if start >= 0:
                end = self._end[slot]
                self._start[slot] = len(data)
                data += view[start:end]
                self._end[slot] = len(data)
        view.release()
        self._data, self._garbage = data, 0


def _encode(row: dict[str, Any]) -> bytes:
    if row.keys() == _KEYS:
        return marshal.dumps([row[c] for c in ROW_COLUMNS])
    return marshal.dumps(dict(row))
