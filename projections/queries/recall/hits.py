"""What a recall answers: a hit as the API renders it (`RecallHit`), and the candidate it is made from
(`Candidate`: the row, its vector and scores; its warnings are decided here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from projections.memories.scores import Scores


@dataclass(frozen=True, slots=True)
class RecallHit:
    memory_id: str
    content: str
    score: float
    namespace: str
    category: str
    tags: list[str] = field(default_factory=list)
    source: str = ""
    version: int = 1
    timestamp: str = ""
    freshness: str = "fresh"
    similarity: float = 0.0
    fallback: bool = False
    warnings: tuple[str, ...] = ()
    importance: float = 1.0
    quality_score: float = 0.5
    confidence: float = 0.5
    expansion: str = ""          # "graph" when added by graph expansion
    via: str = ""                # the hit it was reached from, and how


@dataclass(slots=True)
class Candidate:
    row: dict[str, Any]
    vector: np.ndarray
    score: float
    similarity: float
    fallback: bool = False
    scores: Scores | None = None
    via: str = ""

    def hit(self) -> RecallHit:
        r = self.row
        s = self.scores
        freshness = s.freshness if s is not None else r.get("freshness", "fresh")
        warnings = []
        if freshness == "stale":
            warnings.append("stale: this memory may be outdated; verify before relying on it")
        if r.get("volatile_flag"):
            warnings.append("volatile: corrected repeatedly; check what triggers its changes")
        if r.get("quality_notice_at"):
            warnings.append("low_quality: agents found it unhelpful; needs review")
        if r.get("status") == "deprecated":
            warnings.append("deprecated: marked outdated; the next forget run removes it")
        if r.get("conflicts"):
            warnings.append(f"conflict: contradicted by another memory (conflict {', '.join(r['conflicts'])}); "
                            "see GET /api/v1/conflicts")
        return RecallHit(memory_id=r["id"], content=r["content"], score=float(self.score), namespace=r["namespace"],
                         category=r["category"], tags=list(r.get("tags") or []), source=r.get("source", ""),
                         version=int(r.get("version", 1)), timestamp=r.get("timestamp", ""),
                         freshness=freshness, similarity=float(self.similarity),
                         fallback=self.fallback, warnings=tuple(warnings),
                         importance=s.importance if s is not None else 1.0,
                         quality_score=s.quality if s is not None else 0.5,
                         confidence=s.confidence if s is not None else 0.5,
                         expansion="graph" if self.via else "", via=self.via)
