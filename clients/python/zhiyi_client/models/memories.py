"""Results of the memory endpoints: commit, batch commit, recall, delete/deprecate/correct, feedback,
versions."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ._fields import (
    JSON, flag, integer, number, obj, objects, opt_integer, opt_number, opt_text, text, texts,
)
from .base import raw_field


@dataclass(frozen=True, kw_only=True)
class ConflictRef:
    """A conflict a commit raised against a stored memory."""

    conflict_id: str
    memory_id: str
    kind: str
    confidence: float

    @classmethod
    def from_json(cls, data: JSON) -> ConflictRef:
        return cls(conflict_id=text(data, "conflict_id"), memory_id=text(data, "memory_id"),
                   kind=text(data, "kind"), confidence=number(data, "confidence"))


def _conflicts(data: JSON) -> tuple[ConflictRef, ...]:
    return tuple(ConflictRef.from_json(c) for c in objects(data, "conflicts"))


@dataclass(frozen=True, kw_only=True)
class CommitResult:
    """`POST /api/v1/commit`. `duplicate`: a repeat of an earlier commit (same idempotency key)."""

    memory_id: str
    namespace: str
    version: int
    position: str
    duplicate: bool
    conflicts: tuple[ConflictRef, ...]
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> CommitResult:
        d = obj(data)
        return cls(memory_id=text(d, "memory_id"), namespace=text(d, "namespace"), version=integer(d, "version", 1),
                   position=text(d, "position"), duplicate=flag(d, "duplicate"), conflicts=_conflicts(d), raw=d)


@dataclass(frozen=True, kw_only=True)
class BatchEntryResult:
    memory_id: str
    position: str
    conflicts: tuple[ConflictRef, ...]

    @classmethod
    def from_json(cls, data: JSON) -> BatchEntryResult:
        return cls(memory_id=text(data, "memory_id"), position=text(data, "position"), conflicts=_conflicts(data))


@dataclass(frozen=True, kw_only=True)
class BatchCommitResult:
    """`POST /api/v1/batch-commit`: one result per entry, in order; `position` is the batch's last."""

    results: tuple[BatchEntryResult, ...]
    position: str
    duplicate: bool
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> BatchCommitResult:
        d = obj(data)
        return cls(results=tuple(BatchEntryResult.from_json(r) for r in objects(d, "results")),
                   position=text(d, "position"), duplicate=flag(d, "duplicate"), raw=d)

    @property
    def memory_ids(self) -> list[str]:
        return [r.memory_id for r in self.results]


@dataclass(frozen=True, kw_only=True)
class RecallHit:
    """One recalled memory. `score` is the fused relevance in [0, 1]; `similarity` the raw cosine."""

    memory_id: str
    content: str
    score: float
    namespace: str
    category: str | None
    tags: tuple[str, ...]
    source: str | None
    version: int | None
    timestamp: str | None
    freshness: str | None
    similarity: float | None
    importance: float | None
    quality_score: float | None
    confidence: float | None
    fallback: str | None
    expansion: str | None
    via: str | None
    warnings: tuple[str, ...]
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> RecallHit:
        d = obj(data)
        return cls(memory_id=text(d, "memory_id"), content=text(d, "content"), score=number(d, "score"),
                   namespace=text(d, "namespace"), category=opt_text(d, "category"), tags=texts(d, "tags"),
                   source=opt_text(d, "source"), version=opt_integer(d, "version"),
                   timestamp=opt_text(d, "timestamp"), freshness=opt_text(d, "freshness"),
                   similarity=opt_number(d, "similarity"), importance=opt_number(d, "importance"),
                   quality_score=opt_number(d, "quality_score"), confidence=opt_number(d, "confidence"),
                   fallback=opt_text(d, "fallback"), expansion=opt_text(d, "expansion"), via=opt_text(d, "via"),
                   warnings=texts(d, "warnings"), raw=d)


@dataclass(frozen=True, kw_only=True)
class PrefetchHit:
    """A CO_OCCURS partner of a top result (`with`: the result it goes with)."""

    memory_id: str
    content: str
    namespace: str
    weight: float
    with_: str

    @classmethod
    def from_json(cls, data: JSON) -> PrefetchHit:
        return cls(memory_id=text(data, "memory_id"), content=text(data, "content"),
                   namespace=text(data, "namespace"), weight=number(data, "weight"), with_=text(data, "with"))


@dataclass(frozen=True, kw_only=True)
class RecallResult:
    """`/api/v1/recall` (and `/api/v1/bootstrap`): iterate it for the hits, best first."""

    results: tuple[RecallHit, ...]
    namespaces: tuple[str, ...]
    position: str
    took_ms: float | None
    cached: bool
    prefetch: tuple[PrefetchHit, ...]
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> RecallResult:
        d = obj(data)
        return cls(results=tuple(RecallHit.from_json(r) for r in objects(d, "results")),
                   namespaces=texts(d, "namespaces"), position=text(d, "position"),
                   took_ms=opt_number(d, "took_ms"), cached=flag(d, "cached"),
                   prefetch=tuple(PrefetchHit.from_json(p) for p in objects(d, "prefetch")), raw=d)

    def __iter__(self) -> Iterator[RecallHit]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)


@dataclass(frozen=True, kw_only=True)
class MemoryChange:
    """A new version of a memory: a delete, deprecation or correction."""

    memory_id: str
    version: int
    position: str
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> MemoryChange:
        d = obj(data)
        return cls(memory_id=text(d, "memory_id"), version=integer(d, "version"), position=text(d, "position"),
                   raw=d)


@dataclass(frozen=True, kw_only=True)
class FeedbackResult:
    """A useful / not-useful vote. `buffered`: a LAN replica kept it until its primary is back (202)."""

    memory_id: str
    verdict: str
    position: str | None
    buffered: bool
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> FeedbackResult:
        d = obj(data)
        return cls(memory_id=text(d, "memory_id"), verdict=text(d, "verdict"), position=opt_text(d, "position"),
                   buffered=flag(d, "buffered"), raw=d)


@dataclass(frozen=True, kw_only=True)
class VersionEntry:
    version: int
    content: str
    updated_by: str | None
    source: str | None
    trigger: str | None
    reason: str | None
    timestamp: str | None

    @classmethod
    def from_json(cls, data: JSON) -> VersionEntry:
        return cls(version=integer(data, "version"), content=text(data, "content"),
                   updated_by=opt_text(data, "updated_by"), source=opt_text(data, "source"),
                   trigger=opt_text(data, "trigger"), reason=opt_text(data, "reason"),
                   timestamp=opt_text(data, "timestamp"))


@dataclass(frozen=True, kw_only=True)
class Versions:
    """`GET /api/v1/memory/{id}/versions`: the memory now and its version history, oldest first."""

    memory_id: str
    namespace: str
    version: int
    content: str
    status: str | None
    is_deleted: bool
    volatile: bool
    category: str | None
    useful_count: int
    not_useful_count: int
    recall_count: int
    quality_score: float | None
    derived_from: str | None
    versions: tuple[VersionEntry, ...]
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> Versions:
        d = obj(data)
        return cls(memory_id=text(d, "memory_id"), namespace=text(d, "namespace"), version=integer(d, "version"),
                   content=text(d, "content"), status=opt_text(d, "status"), is_deleted=flag(d, "is_deleted"),
                   volatile=flag(d, "volatile"), category=opt_text(d, "category"),
                   useful_count=integer(d, "useful_count"), not_useful_count=integer(d, "not_useful_count"),
                   recall_count=integer(d, "recall_count"), quality_score=opt_number(d, "quality_score"),
                   derived_from=opt_text(d, "derived_from"),
                   versions=tuple(VersionEntry.from_json(v) for v in objects(d, "versions")), raw=d)
