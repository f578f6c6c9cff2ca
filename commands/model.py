"""Command dataclasses (imperative names) and request limits (the acting identity: `commands.access`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from events.vocabulary import SHARED_NAMESPACE


@dataclass(frozen=True, slots=True)
class Limits:
    max_content_chars: int = 16_000
    max_tags: int = 32
    max_tag_chars: int = 64
    max_depends_on: int = 64
    max_source_chars: int = 128
    max_derived_from_chars: int = 128
    max_reason_chars: int = 1_000
    max_batch: int = 1_000
    max_query_chars: int = 2_000
    max_top_k: int = 100
    max_include_namespaces: int = 16
    max_synonyms: int = 32
    max_synonym_chars: int = 64
    max_episode_bytes: int = 256 * 1024     # one episode's JSON (its turns and fields), as sent
    max_episode_turns: int = 2_000
    max_episode_batch: int = 100


@dataclass(frozen=True, slots=True)
class RegisterAgent:
    agent_id: str
    agent_type: str = "generic"
    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class CommitMemory:
    content: str
    category: str
    decay_class: str
    namespace: str | None = None
    tier: str = "normal"
    kind: str = "L1"
    source: str = "agent_inference"
    tags: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    derived_from: str = ""       # the episode (conversation, session, task) it came from; "" = none
    session_id: str = ""         # an ephemeral memory's session: closing it forgets them (POST /sessions/{id}/close)


@dataclass(frozen=True, slots=True)
class BatchCommit:
    entries: tuple[CommitMemory, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class EpisodeTurn:
    role: str                    # user | assistant | tool | system
    content: str
    at: str = ""                 # ISO 8601 as the client sent it; "" = not given


@dataclass(frozen=True, slots=True)
class CommitEpisode:
    """Store a raw episode (L0): a conversation or a task log. `episode_id` "" = generate one."""

    kind: str                    # conversation | task
    turns: tuple[EpisodeTurn, ...]
    status: str = "ok"           # ok | skipped | error (a task's outcome)
    episode_id: str = ""
    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class CommitEpisodes:
    entries: tuple[CommitEpisode, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class DeleteMemory:
    memory_id: str
    expected_version: int | None = None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class GiveFeedback:
    memory_id: str
    verdict: str                 # useful | not_useful
    reason: str = ""


@dataclass(frozen=True, slots=True)
class DeprecateMemory:
    memory_id: str
    reason: str
    expected_version: int | None = None


@dataclass(frozen=True, slots=True)
class CorrectMemory:
    memory_id: str
    content: str
    reason: str
    source: str = ""
    trigger: str = ""
    expected_version: int | None = None


@dataclass(frozen=True, slots=True)
class AddSynonyms:
    """Declare `term` and `synonyms` mutually synonymous in `namespace` (admin)."""

    term: str
    synonyms: tuple[str, ...]
    namespace: str = SHARED_NAMESPACE


@dataclass(frozen=True, slots=True)
class IdempotencyRequest:
    """The client's Idempotency-Key and a fingerprint of the request it came with."""

    key: str
    fingerprint: str
