"""The triggers of one process (seed 6.4): each trigger's action built from the wiring's services, or
the reason it cannot run in this deployment (`GET /api/v1/triggers` shows it as `disabled`)."""

from __future__ import annotations

from typing import Any

from commands.reactions.dedup import DedupPolicy
from commands.triggers import actions
from commands.triggers.service import TriggerService
from commands.triggers.sweeps import ConflictSweepPolicy, Sweep


def build_triggers(s: Any) -> TriggerService:
    """`s`: `gateway.process.wiring.Services`."""
    """The trigger service with each trigger's action, or the reason it is disabled here."""
    st = s.settings
    service = TriggerService(s.store, s.consolidation_reader, s.waiter, s.clock, wait_s=max(st.projection_wait_s, 30))
    add, disable = service.actions.__setitem__, service.disabled.__setitem__
    add("prune", actions.prune_action(s.scheduler))
    add("decay", actions.decay_action(s.scheduler))
    add("consolidation", actions.consolidation_action(s.consolidation))
    add("gap", actions.gap_action(s.gap_repairer))
    service.probes.append(actions.gap_probe(s.gap_repairer))
    if s.llm is not None:
        add("backtrace", actions.backtrace_action(s.consolidation))
    else:
        disable("backtrace", "needs an LLM (LLM_ENDPOINT)")
    if s.distill_batcher is not None:
        add("distill", actions.distill_action(s.distill_batcher))
        service.probes.append(actions.distill_probe(s.distill_batcher))
    else:
        disable("distill", "no LLM distillation queue: without LLM_ENDPOINT episodes are distilled by rules as "
                           "they arrive" if s.llm is None else "this process runs no reactions")
    sweeps = {}
    if st.conflict_check:
        sweeps["conflict"] = Sweep(s.store, s.waiter, ConflictSweepPolicy(s.recall, s.pair_model, s.conflicts))
    else:
        disable("conflict", "ZHIYI_CONFLICT_CHECK=0")
    if st.merge:
        sweeps["merge"] = Sweep(s.store, s.waiter, DedupPolicy(s.recall, s.store, s.pair_model))
    else:
        disable("merge", "ZHIYI_MERGE is off (merging is opt-in)")
    for name, sweep in sweeps.items():
        add(name, actions.sweep_action(name, sweep))
        service.probes.append(actions.sweep_probe(name, sweep))
    return service
