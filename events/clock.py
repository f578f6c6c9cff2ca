"""The wall clock, injectable: the scheduler and query-time scores read `now` only through a
`Clock`, so tests (and a `tick` on demand) can run 7-, 14-, 30- and 180-day rules at once.
Projectors never take one: their time comes from the events."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

DAY_MS = 86_400_000


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SystemClock:
    def now_ms(self) -> int:
        return int(time.time() * 1000)


@dataclass
class ManualClock:
    """A clock that stands still until moved (tests)."""

    ms: int

    def now_ms(self) -> int:
        return self.ms

    def advance(self, *, days: float = 0.0, ms: int = 0) -> int:
        self.ms += int(days * DAY_MS) + ms
        return self.ms
