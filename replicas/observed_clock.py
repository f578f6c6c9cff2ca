"""The HLC stamps a LAN replica gives the votes it buffers (`memory.feedback.observed_at`).

`wall_ms:counter:node` like the log's stamps (events.hlc), from this machine's clock, never going
back within the process: the vote registers order a buffered vote against votes given to the primary
by these stamps (last writer wins), so replica and primary clocks should be kept in step (NTP).
"""

from __future__ import annotations

import threading
import time

from events.hlc import HLC


class ObservedClock:
    def __init__(self, node: str) -> None:
        self.node = node
        self._last = HLC(0, 0, node)
        self._lock = threading.Lock()

    def now(self, wall_ms: int | None = None) -> str:
        wall = int(time.time() * 1000) if wall_ms is None else wall_ms
        with self._lock:
            if wall > self._last.wall_ms:
                self._last = HLC(wall, 0, self.node)
            else:
                self._last = HLC(self._last.wall_ms, self._last.counter + 1, self.node)
            return str(self._last)
