"""Distillation (seed 3.1, flow 1) as a reaction on `episode.committed`.

The hard rules run first (`commands.distill.hard_rules`): a skipped episode gets
`episode.distilled` (skipped, the reason). Otherwise:

- without an LLM (the embedded default) the extractor decides at once — the rules with the learned
  judge (`commands.distill.learned`, `learned:v1`, the default) or the rules alone (`rules:v1`,
  `ZHIYI_DISTILL_EXTRACTOR=rules`): the episode's
  `episode.distillation_started`, its memories (`memory.committed`, `derived_from` the episode) and
  `episode.distilled` are appended together;
- with an LLM the episode is queued: `episode.distillation_started` (distill_status `processing`,
  extractor `llm:<model>`), and `commands.distill.batcher.DistillBatcher` distils the queue in
  batches of 10 or every 5 minutes; an explicit "remember this" is distilled by the LLM at once and
  outside the budget (seed 3.1's urgent path). A model that fails or answers nonsense falls back to
  the rules (the episode's note says so).

Every decision is an event, so replay never calls the LLM. The follow-ups' idempotency key is the
runner's `reaction:<cause>:distill`: a redelivered episode is never distilled twice.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import structlog

from commands.distill import outcome
from commands.distill.engine import asks_to_remember, distill_by_rules
from commands.distill.learned import StatementJudge
from commands.distill.llm_extractor import distill_batch_by_llm, extractor_name
from commands.distill.outcome import EpisodeRef
from commands.llm import LLMError
from events.catalogue import EpisodeCommitted
from events.envelope import Event

log = structlog.get_logger(__name__)


@dataclass
class DistillationPolicy:
    llm: Any = None                   # commands.llm.ChatClient on the distillation budget; None: rules only
    judge: StatementJudge | None = None   # the learned judge (`learned:v1`) beside the rules; None: `rules:v1`
    name: str = "distill"
    reads: tuple[str, ...] = ()

    def wants(self, event: Event) -> bool:
        return isinstance(event.data, EpisodeCommitted)

    async def decide(self, event: Event) -> list[Event]:
        d: EpisodeCommitted = event.data
        ref = EpisodeRef(d.episode_id, d.namespace, event.agent)
        rules = await asyncio.to_thread(distill_by_rules, d.kind, d.status, d.turns, self.judge) \
            if self.judge is not None else distill_by_rules(d.kind, d.status, d.turns)
        density = rules.verdict.density
        if rules.verdict.skip:
            log.info("distill.skipped", episode=d.episode_id, ns=d.namespace, reason=rules.verdict.reason)
            return outcome.skipped(ref, rules.verdict.reason, density)
        if self.llm is None:
            return outcome.completed(ref, rules.candidates, rules.extractor, density=density)
        if not asks_to_remember(d.turns):
            return [outcome.started(ref, extractor_name(self.llm))]   # queued for the next LLM batch
        try:
            [candidates] = await distill_batch_by_llm(self.llm, [d.turns], charge=False)
        except (LLMError, ValueError) as exc:
            log.warning("distill.llm_failed", episode=d.episode_id, error=str(exc)[:300])
            return outcome.completed(ref, rules.candidates, rules.extractor, density=density, note="llm_failed")
        return outcome.completed(ref, candidates, extractor_name(self.llm), density=density, note="remember_this")
