"""Hybrid logical clock stamps `wall_ms:counter:node`.

The stamp is assigned inside the append script from Redis `TIME`, so on one primary the
HLC order equals the log order. Python only parses and compares stamps.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache


@dataclass(frozen=True, slots=True, order=True)
class HLC:
    wall_ms: int
    counter: int
    node: str

    @classmethod
    def parse(cls, text: str) -> "HLC":
        wall, counter, node = text.split(":", 2)
        return cls(int(wall), int(counter), node)

    def __str__(self) -> str:
        return f"{self.wall_ms}:{self.counter}:{self.node}"

    def iso(self) -> str:
        """Wall time as ISO 8601 UTC with milliseconds (deterministic: derived from the stamp)."""
        return iso_from_ms(self.wall_ms)


def iso_from_ms(ms: int) -> str:
    """'2026-12-06T02:15:46.123Z' for ms since the epoch (UTC, floor to the millisecond)."""
    return f"{_iso_second(ms // 1000)}{ms % 1000:03d}Z"


@lru_cache(maxsize=4096)
def _iso_second(seconds: int) -> str:
    """The ISO text up to the second, remembered: strftime costs ~5 us, and the stamps a fold or a
    reader formats mostly share their second with others (a replay formats several per event)."""
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.")


def sort_key(text: str) -> tuple[int, int, str]:
    h = HLC.parse(text)
    return (h.wall_ms, h.counter, h.node)
