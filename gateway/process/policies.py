"""The reaction policies a deployment runs (the reactions runner's list), built from the services."""

from __future__ import annotations

from typing import TYPE_CHECKING

from commands.reactions.cascade import CorrectionCascadePolicy
from commands.reactions.conflict_resolution import ConflictAutoResolvePolicy
from commands.reactions.conflict_scan import DistilledConflictsPolicy
from commands.reactions.dedup import DedupPolicy
from commands.reactions.distillation import DistillationPolicy
from commands.reactions.llm_entities import LLMEntityPolicy
from commands.reactions.policy import Policy
from commands.reactions.gaps import GapWatchPolicy
from commands.reactions.quality import QualityNoticePolicy
from commands.reactions.skills import SkillCrystallizationPolicy
from commands.reactions.validator import PassiveValidatorPolicy
from commands.reactions.worldmodel import WorldModelPolicy

if TYPE_CHECKING:
    from gateway.process.wiring import Services


def reaction_policies(services: Services) -> list[Policy]:
    """The reaction policies a deployment runs: the quality notice, the passive validator, the
    correction cascade, skill crystallisation, knowledge-gap detection, the world model, distillation (the rules and the learned judge, or the LLM's queue), the
    conflict check of distilled memories (unless ZHIYI_CONFLICT_CHECK=0), conflict auto-resolution (unless ZHIYI_CONFLICT_AUTO_RESOLVE=0) and dedup (with ZHIYI_MERGE=1), plus the LLM entity extraction when an LLM endpoint is configured."""
    s = services
    policies: list[Policy] = [QualityNoticePolicy(s.memories, s.counters),
                              PassiveValidatorPolicy(s.recall, s.memories, s.counters),
                              CorrectionCascadePolicy(s.graph, s.store),
                              DistillationPolicy(s.distill_llm, s.distill_judge),
                              SkillCrystallizationPolicy(s.memories, s.conflicts, s.learning),
                              GapWatchPolicy(s.recall, s.store, s.learning),
                              WorldModelPolicy(s.world, s.memories, s.learning)]
    if s.settings.conflict_check:
        policies.append(DistilledConflictsPolicy(s.recall, s.pair_model))
    if s.settings.conflict_auto_resolve:
        policies.append(ConflictAutoResolvePolicy(s.memories, s.conflicts, s.store, s.llm))
    if s.settings.merge:
        policies.append(DedupPolicy(s.recall, s.store, s.pair_model))
    if s.llm is not None:
        policies.append(LLMEntityPolicy(s.llm))
    return policies
