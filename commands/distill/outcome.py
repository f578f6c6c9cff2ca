"""The events a distillation decides, for one episode (pure: ids are derived, never random).

- skipped by a hard rule: `episode.distilled` (skipped, the reason);
- extracted: `episode.distillation_started` (when not recorded before), one `memory.committed` per
  candidate — in the episode's namespace, by the agent that committed the episode, `derived_from`
  the episode, with the extractor's name and scores — then `episode.distilled` (completed, the
  memories' ids), appended together so no reader sees memories without their episode's status.
A candidate's `depends_on` (indices of other candidates) become memory ids: DEPENDS_ON edges in the
graph (seed 3.4).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Sequence

from commands.distill.rule_extractor import Candidate
from events.catalogue import EpisodeDistillationStarted, EpisodeDistilled, MemoryCommitted, new_event
from events.envelope import Event
from events.vocabulary import DECAY_CLASS_BY_CATEGORY

_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "zhiyi:distilled")
DISTILLED_TAG = "distilled"


@dataclass(frozen=True, slots=True)
class EpisodeRef:
    """The episode a distillation is about: its id, namespace and the agent that committed it."""

    episode_id: str
    namespace: str
    agent: str


def distilled_memory_id(ref: EpisodeRef, extractor: str, index: int) -> str:
    return str(uuid.uuid5(_ID_NAMESPACE, f"{ref.namespace}\n{ref.episode_id}\n{extractor}\n{index}"))


def started(ref: EpisodeRef, extractor: str) -> Event:
    return new_event(EpisodeDistillationStarted(ref.episode_id, ref.namespace, extractor), ns=ref.namespace,
                     agent=ref.agent, by="reaction")


def skipped(ref: EpisodeRef, reason: str, density: float) -> list[Event]:
    return [new_event(EpisodeDistilled(ref.episode_id, ref.namespace, "skipped", (), "", reason, density),
                      ns=ref.namespace, agent=ref.agent, by="reaction")]


def completed(ref: EpisodeRef, candidates: Sequence[Candidate], extractor: str, *, density: float,
              note: str = "", with_start: bool = True) -> list[Event]:
    ids = [distilled_memory_id(ref, extractor, i) for i in range(len(candidates))]
    events = [started(ref, extractor)] if with_start else []
    for i, (memory_id, c) in enumerate(zip(ids, candidates)):
        deps = tuple(ids[j] for j in c.depends_on if 0 <= j < len(ids) and j != i)
        events.append(new_event(MemoryCommitted(
            memory_id=memory_id, content=c.content, namespace=ref.namespace, category=c.category,
            decay_class=DECAY_CLASS_BY_CATEGORY[c.category], source=c.source, tags=(DISTILLED_TAG,),
            depends_on=deps, derived_from=ref.episode_id, extractor=extractor, scores=c.scores),
            ns=ref.namespace, agent=ref.agent, by="reaction"))
    events.append(new_event(EpisodeDistilled(ref.episode_id, ref.namespace, "completed", tuple(ids), extractor, note,
                                             density), ns=ref.namespace, agent=ref.agent, by="reaction"))
    return events
