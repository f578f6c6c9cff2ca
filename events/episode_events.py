"""The episode events (registered in `events.catalogue`, which re-exports them): a raw episode (L0)
and the decisions of its distillation into L1 memories."""

from __future__ import annotations

from dataclasses import dataclass

from events.catalogue import event_type


@event_type("episode.committed")
@dataclass(frozen=True, slots=True)
class EpisodeCommitted:
    """A raw episode (L0, seed 1.2): a conversation or a task log, immutable. `episode_id` is the
    client's opaque id (or one generated at the edge), scoped to `namespace` — the id memories carry
    in `derived_from`. `turns` are {role, content, at?} objects; `fingerprint` is the sha256 of the
    episode's canonical body (a retry with the same body is a duplicate, another body a conflict)."""

    episode_id: str
    namespace: str
    kind: str                                  # conversation | task
    status: str                                # ok | skipped | error
    turns: tuple[dict[str, str], ...]
    fingerprint: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "turns", tuple(self.turns))


@event_type("episode.distillation_started")
@dataclass(frozen=True, slots=True)
class EpisodeDistillationStarted:
    """The distillation reaction took the episode (distill_status `processing`): it passed the hard
    rules and waits for `extractor` (an LLM batch), or is being extracted now."""

    episode_id: str
    namespace: str
    extractor: str


@event_type("episode.distilled")
@dataclass(frozen=True, slots=True)
class EpisodeDistilled:
    """The episode's distillation is decided: `completed` with the memories it yielded (`distilled_to`,
    committed in the same append, possibly none) or `skipped` by a hard rule (`reason`). `density` is
    the information density the hard rules measured; `extractor` wrote the memories."""

    episode_id: str
    namespace: str
    status: str                                # completed | skipped
    distilled_to: tuple[str, ...] = ()
    extractor: str = ""
    reason: str = ""
    density: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "distilled_to", tuple(self.distilled_to))
