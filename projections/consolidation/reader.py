"""Read side of the consolidation projection (`projections.consolidation.projector`, SQLite
`consolidation.db`): the runs and their reports, the steps' and triggers' states, the calibrated
decay rates, the notices and the distilled-memory count. A missing database reads as nothing yet
(no run, every rate at its appendix-B base, every trigger never fired)."""

from __future__ import annotations

import asyncio
import time
from typing import Any, ClassVar, Mapping

import orjson

from projections.core.sqlite_reader import SqliteReader

DB_FILE = "consolidation.db"
TABLES = ("runs", "steps", "decay_rates", "triggers", "notices", "counters")
#: Extractors of memories that were not distilled from an episode (a pattern mined by consolidation).
NOT_DISTILLED_PREFIX = "consolidation"


def is_mined(extractor: str) -> bool:
    """Was a memory with this `extractor` mined by deep consolidation (a pattern summarising others)?
    It is no independent evidence: it validates, contradicts and duplicates nothing."""
    return extractor.startswith(NOT_DISTILLED_PREFIX)


def is_distilled(extractor: str) -> bool:
    """Was a memory with this `extractor` written by distillation (not by an agent, not a pattern)?"""
    return bool(extractor) and not extractor.startswith(NOT_DISTILLED_PREFIX)


def _loads(text: str) -> Any:
    return orjson.loads(text) if text else None


class ConsolidationReader(SqliteReader):
    reads: ClassVar[tuple[str, ...]] = ("consolidation",)

    def __init__(self, directory: Any) -> None:
        super().__init__(directory, DB_FILE)

    # ------------------------------------------------------------------ synchronous reads (call from a thread)

    def decay_rates(self) -> dict[str, float]:
        """The calibrated daily decay rate of each decay class that has one."""
        return {c: float(r) for c, r in self.fetch("SELECT decay_class, rate FROM decay_rates")}

    def rate_rows(self) -> list[dict[str, Any]]:
        cols = ("decay_class", "base", "rate", "fitted", "samples", "status", "run_id")
        return [dict(zip(cols, r)) for r in self.fetch(f"SELECT {', '.join(cols)} FROM decay_rates ORDER BY 1")]

    def runs(self, limit: int = 10) -> list[dict[str, Any]]:
        cols = ("run_id", "position", "at_ms", "trigger", "steps", "clusters", "patterns", "report")
        out = []
        for row in self.fetch(f"SELECT {', '.join(cols)} FROM runs ORDER BY at_ms DESC, position DESC LIMIT ?",
                             (limit,)):
            r = dict(zip(cols, row))
            for key in ("steps", "clusters", "patterns", "report"):
                r[key] = _loads(r[key])
            out.append(r)
        return out

    def pattern_members(self) -> list[list[str]]:
        """The member ids of every pattern a run wrote (what the next mining must not repeat)."""
        out: list[list[str]] = []
        for (patterns,) in self.fetch("SELECT patterns FROM runs"):
            out += [list(p.get("members", [])) for p in _loads(patterns) or []]
        return out

    def steps(self) -> dict[str, dict[str, Any]]:
        cols = ("step", "failures", "disabled", "last_status", "last_error", "last_run")
        return {r[0]: {**dict(zip(cols, r)), "disabled": bool(r[2])}
                for r in self.fetch(f"SELECT {', '.join(cols)} FROM steps")}

    def triggers(self) -> dict[str, dict[str, Any]]:
        cols = ("name", "last_fired_ms", "last_attempt_ms", "fired", "failures", "paused", "paused_reason",
                "last_error", "marks", "last_result")
        out = {}
        for row in self.fetch(f"SELECT {', '.join(cols)} FROM triggers"):
            r = dict(zip(cols, row))
            r["paused"], r["marks"], r["last_result"] = bool(r["paused"]), _loads(r["marks"]), _loads(r["last_result"])
            out[r["name"]] = r
        return out

    def notices(self, limit: int = 100) -> list[dict[str, Any]]:
        cols = ("position", "at", "kind", "subject", "message")
        return [dict(zip(cols, r)) for r in
                self.fetch(f"SELECT {', '.join(cols)} FROM notices ORDER BY position DESC LIMIT ?", (limit,))]

    def counter(self, name: str) -> int:
        rows = self.fetch("SELECT value FROM counters WHERE name = ?", (name,))
        return int(rows[0][0]) if rows else 0

    # ------------------------------------------------------------------ async wrappers

    async def state(self) -> dict[str, Any]:
        """Everything the trigger evaluation reads, in one thread hop."""
        return await asyncio.to_thread(lambda: {"triggers": self.triggers(), "distilled": self.counter("distilled"),
                                                "runs": self.runs(1), "steps": self.steps()})


class DecayRates:
    """The calibrated decay rates as the query side reads them (recall's freshness, the versions
    view, the stale rule): re-read from the projection at most every `ttl_s` seconds."""

    def __init__(self, reader: ConsolidationReader, ttl_s: float = 1.0) -> None:
        self.reader = reader
        self.ttl_s = ttl_s
        self._rates: Mapping[str, float] = {}
        self._read_at = float("-inf")

    def get(self) -> Mapping[str, float]:
        now = time.monotonic()
        if now - self._read_at >= self.ttl_s:
            self._rates, self._read_at = self.reader.decay_rates(), now
        return self._rates
