"""Hybrid logical clock stamps `wall_ms:counter:node`.

The stamp is assigned inside the append script from Redis `TIME`, so on one primary the
HLC order equals the log order. Python only parses and compares stamps.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime


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
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def sort_key(text: str) -> tuple[int, int, str]:
    h = HLC.parse(text)
    return (h.wall_ms, h.counter, h.node)
