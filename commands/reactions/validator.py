"""PassiveValidator policy (seed 3.3.4): a new commit that restates what a stored memory says
confirms that memory, without anyone asking.

On each `memory.committed`, the memories closest to the new content (recall over its namespace
and `shared`, committed before it) are matched against it (`validation_match`): P1 shared
entities, P2 shared keywords, P3 content overlap >= 0.25 each add 0.15 to the memory's confidence
at once; a partial overlap (>= 0.12) is remembered in Redis (a sorted set of the commits that
overlapped, so a redelivered commit counts once; `events.redis.counters`) and every third one adds 0.10. Each becomes a
`memory.validated` event; confidence is capped at 1.0 when folded, and a memory already at the
cap is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from commands.reactions.validation_match import (
    CONFIDENCE_CAP, P3_ACCUMULATED_DELTA, P3_PARTIALS_NEEDED, match,
)
from events import positions
from events.catalogue import MemoryCommitted, MemoryValidated, new_event
from events.envelope import Event
from events.redis.counters import Counters
from events.vocabulary import SHARED_NAMESPACE
from projections.queries.recall.service import RecallRequest
from projections.consolidation.reader import is_mined
from projections.memories.scores import ms_of

CANDIDATES = 10          # nearest stored memories compared with each commit
MAX_VALIDATED = 5        # memories one commit may confirm
PARTIALS_TTL_S = 180 * 86_400
CANDIDATE_COLUMNS = ["id", "content", "namespace", "confidence", "timestamp"]


@dataclass
class PassiveValidatorPolicy:
    recall: Any                      # projections.queries.recall.service.RecallService
    reader: Any                      # projections.memories.reader.MemoriesReader
    counters: Counters
    name: str = "passive_validator"
    reads: tuple[str, ...] = ("memories",)

    def wants(self, event: Event) -> bool:
        return isinstance(event.data, MemoryCommitted) and bool(event.data.content.strip()) and \
            not is_mined(event.data.extractor)   # a pattern restates its members: no independent evidence

    async def decide(self, event: Event) -> list[Event]:
        d = event.data
        scope = list(dict.fromkeys([d.namespace, SHARED_NAMESPACE]))
        hits = await self.recall.recall(RecallRequest(query=d.content[:2000], namespaces=scope,
                                                      top_k=CANDIDATES + 1, diversity=0.0, context=0.0))
        ids = [h.memory_id for h in hits if h.memory_id != d.memory_id]
        rows = await self.reader.arows(ids, columns=CANDIDATE_COLUMNS)
        out: list[Event] = []
        for mid in ids:
            row = rows.get(mid)
            if row is None or not _before(row, event):
                continue
            if float(row.get("confidence") or 0.0) >= CONFIDENCE_CAP:
                continue
            m = match(d.content, row["content"])
            if m is None:
                continue
            level, delta = m.level, m.delta
            if delta <= 0:  # a partial overlap: every third one counts
                if not await self._third_partial(mid, event.position):
                    continue
                level, delta = "P3_accumulated", P3_ACCUMULATED_DELTA
            out.append(new_event(MemoryValidated(mid, row["namespace"], level, delta, d.memory_id,
                                                 tuple(m.evidence[:10])),
                                 ns=row["namespace"], agent="system", by="reaction"))
            if len(out) >= MAX_VALIDATED:
                break
        return out

    async def _third_partial(self, memory_id: str, cause: str) -> bool:
        """Record `cause` as a partial overlap of the memory; True when it is a third one (the 3rd,
        6th, ... in log order). Idempotent: a redelivered cause keeps its rank."""
        ms, _ = positions.key(cause)
        rank = await self.counters.rank_partial(memory_id, cause, float(ms), PARTIALS_TTL_S)
        return rank is not None and (rank + 1) % P3_PARTIALS_NEEDED == 0


def _before(row: dict[str, Any], event: Event) -> bool:
    """Committed strictly before the event that would validate it: not itself, not what came after
    it, not a sibling of the same batch (one append, one millisecond)."""
    return 0 < ms_of(row.get("timestamp") or "") < event.wall_ms
