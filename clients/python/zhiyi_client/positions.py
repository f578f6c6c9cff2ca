"""Log positions (`<milliseconds>-<sequence>`, a Redis stream id) and the read-your-writes mark.

Positions are compared as integer pairs: as strings, `"999-0"` would sort after `"1000-0"`.
"""

from __future__ import annotations

import re
import threading

_POSITION = re.compile(r"[0-9]{1,20}-[0-9]{1,20}")


def is_position(value: object) -> bool:
    """True for a well-formed position string such as `"1700000000000-0"`."""
    return isinstance(value, str) and _POSITION.fullmatch(value) is not None


def position_key(position: str) -> tuple[int, int]:
    """`"1700000000000-3"` -> `(1700000000000, 3)`, the order of the log; ValueError if malformed."""
    if not is_position(position):
        raise ValueError(f"not a position: {position!r} (expected '<ms>-<seq>', e.g. '1700000000000-0')")
    ms, seq = position.split("-")
    return int(ms), int(seq)


def later(a: str | None, b: str | None) -> str | None:
    """The later of two positions (None counts as the beginning of the log)."""
    if a is None:
        return b
    if b is None:
        return a
    return a if position_key(a) >= position_key(b) else b


def is_after(a: str, b: str | None) -> bool:
    """True when `a` comes strictly after `b` in the log (every position is after None)."""
    return b is None or position_key(a) > position_key(b)


class PositionTracker:
    """The highest position the client's writes returned: what its reads wait for (`after=`).

    Thread-safe, so one sync client may be shared by threads; clients derived with `with_key()`
    share their tracker, so an admin's registration and an agent's writes form one history.
    """

    def __init__(self, position: str | None = None) -> None:
        if position is not None:
            position_key(position)
        self._position = position
        self._lock = threading.Lock()

    @property
    def position(self) -> str | None:
        return self._position

    def observe(self, position: object) -> None:
        """Raise the mark to `position` if it is a position later than the current mark."""
        if not is_position(position):
            return
        assert isinstance(position, str)
        with self._lock:
            self._position = later(self._position, position)
