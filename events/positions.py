"""Stream positions: Redis stream ids "ms-seq", compared as integer pairs, never as strings."""

from __future__ import annotations

import re
from functools import lru_cache

_POSITION_RE = re.compile(r"^(\d{1,20})-(\d{1,20})$")

ZERO = "0-0"


def is_valid(position: str) -> bool:
    return isinstance(position, str) and _POSITION_RE.match(position) is not None


@lru_cache(maxsize=1 << 16)
def parse(position: str) -> tuple[int, int]:
    """'1700000000000-3' -> (1700000000000, 3). Raises ValueError for anything else.

    Remembered, and called as the cache itself (no Python frame on a hit): folds compare the same
    few positions (a batch's, a row's high-water) many times, each projector of a replay every event's.
    """
    if not isinstance(position, str):
        raise ValueError(f"not a stream position: {position!r}")
    m = _POSITION_RE.match(position)
    if m is None:
        raise ValueError(f"not a stream position: {position!r}")
    return int(m.group(1)), int(m.group(2))


@lru_cache(maxsize=1 << 14)   # a replay batch's positions (10,000), each asked by every projector
def key(position: str | None) -> tuple[int, int]:
    """Sort key; None and '' sort before every real position."""
    if not position:
        return (-1, -1)
    return parse(position)


def later(a: str | None, b: str | None) -> str | None:
    """The later of two positions (None counts as 'nothing yet')."""
    return a if key(a) >= key(b) else b


def reached(current: str | None, target: str | None) -> bool:
    """True when `current` is at or past `target` (no target is always reached)."""
    if not target:
        return True
    return key(current) >= key(target)


def timestamp_ms(position: str) -> int:
    return parse(position)[0]
