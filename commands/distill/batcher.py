"""The LLM distillation queue (seed 3.1): episodes the reaction queued (`processing`, extractor
`llm:<model>`) are distilled in batches of `batch_size` (10) or once the oldest has waited
`max_wait_s` (5 minutes), one chat call per batch, counted against the distillation budget
(`ZHIYI_LLM_DISTILL_DAILY_LIMIT`). When the budget is spent, or the model fails or answers
nonsense, the batch falls back to the extractor without an LLM (the episode's note says why).

The queue is the episodes projection itself, so nothing is lost in a crash: a batch whose results
were not appended is taken again. Each episode's outcome is appended with the idempotency key
`distill:<episode row id>`, so two gateways running a batcher never distil one episode twice.
The `distill` trigger (`commands.triggers`) runs `run_once` when a batch is due.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
import structlog

from commands.distill import outcome
from commands.distill.engine import distill_by_rules
from commands.distill.learned import StatementJudge
from commands.distill.llm_extractor import BATCH_SIZE, distill_batch_by_llm
from commands.distill.outcome import EpisodeRef
from commands.distill.rule_extractor import Candidate
from commands.llm import BudgetExhausted, LLMError
from events.clock import Clock
from events.redis.store import EventStore, Idempotency

log = structlog.get_logger(__name__)

MAX_WAIT_S = 300.0


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).timestamp() * 1000)


@dataclass
class DistillBatcher:
    store: EventStore
    episodes: Any                     # projections.episodes.reader.EpisodesReader
    llm: Any                          # commands.llm.ChatClient on the distillation budget
    clock: Clock
    batch_size: int = BATCH_SIZE
    max_wait_s: float = MAX_WAIT_S
    judge: StatementJudge | None = None   # the fallback's learned judge (`learned:v1`); None: the rules alone
    _appended: set[str] = field(default_factory=set, init=False, repr=False)   # until the projection shows them

    async def run_once(self) -> int:
        """Distil every batch that is due now; returns the episodes distilled."""
        done = 0
        while True:
            processing = [r for r in await self.episodes.processing() if r["extractor"].startswith("llm:")]
            self._appended &= {r["id"] for r in processing}   # folded since: no longer needed
            queued = [r for r in processing if r["id"] not in self._appended]
            if not queued:
                return done
            oldest_ms = _ms(queued[0]["started_at"])
            if len(queued) < self.batch_size and self.clock.now_ms() - oldest_ms < self.max_wait_s * 1000:
                return done
            batch = queued[:self.batch_size]
            await self._distill(batch)
            done += len(batch)

    async def _distill(self, rows: list[dict[str, Any]]) -> None:
        turns = [orjson.loads(r["chunks"]) for r in rows]
        rules = await asyncio.to_thread(
            lambda: [distill_by_rules(r["kind"], r["status"], t, self.judge) for r, t in zip(rows, turns)])
        note, extractor = "", rows[0]["extractor"]
        results: list[list[Candidate]]
        try:
            results = await distill_batch_by_llm(self.llm, turns)
        except BudgetExhausted as exc:
            note, results = "llm_budget_spent", [r.candidates for r in rules]
            log.warning("distill.budget_spent", episodes=len(rows), error=str(exc))
        except (LLMError, ValueError) as exc:
            note, results = "llm_failed", [r.candidates for r in rules]
            log.warning("distill.llm_failed", episodes=len(rows), error=str(exc)[:300])
        for row, rule, candidates in zip(rows, rules, results):
            ref = EpisodeRef(row["episode_id"], row["namespace"], row["agent_id"])
            events = outcome.completed(ref, candidates, rule.extractor if note else extractor,
                                       density=rule.verdict.density, note=note, with_start=False)
            key = f"distill:{row['id']}"
            res = await self.store.append(events, idempotency=Idempotency("reaction", key, key))
            self._appended.add(row["id"])
            log.info("distill.completed", episode=row["episode_id"], ns=row["namespace"], memories=len(candidates),
                     extractor=rule.extractor if note else extractor, note=note, duplicate=res.duplicate)
