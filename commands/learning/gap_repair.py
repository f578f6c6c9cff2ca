"""The gap trigger's action (seed 6.4 `gap`, flow 3): repair the open knowledge gaps of types B and C
detected since its last run, and verify each repair by running the gap's recalls again.

- C: the recalls again, in the agent's default scope, top_k doubled (at least 20), diversity 0.
- B: a synonym from a query term to the term of the gap's best candidate nearest it in meaning (both
  embedded; the candidate's own terms are not proposed), recorded as `synonym.added` in the
  candidate's namespace; once the synonyms projection has it, the gap's recalls again, as they were.

A repair that makes at least one of the gap's recalls find a result at or above max(its min_score, the
floor) closes the gap (`gap.filled`, pushed to the agent); otherwise it stays open for a person (the
trigger's `trigger.fired` result lists it as not filled) and is not tried again.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import numpy as np

from commands.learning.gaps import MISS_FLOOR, default_scope
from events import positions
from events.catalogue import GapFilled, SynonymAdded, new_event
from events.vocabulary import SHARED_NAMESPACE
from projections.queries.recall.service import RecallRequest
from projections.text.lexical import QUERY_STOP_WORDS, STOP_WORDS, tokens

REPAIRABLE = ("B", "C")
MAX_PER_RUN = 20
SYNONYM_WAIT_S = 10.0


@dataclass
class GapRepairer:
    recall: Any         # projections.queries.recall.service.RecallService
    store: Any          # events.redis.store.EventStore
    learning: Any       # projections.learning.reader.LearningReader
    waiter: Any         # projections.core.waiter.CheckpointWaiter

    async def pending(self, through: str | None) -> list[dict[str, Any]]:
        """Open B/C gaps detected after `through`, oldest first."""
        gaps = await asyncio.to_thread(self.learning.gaps, "open")
        fresh = [g for g in gaps
                 if g["gap_type"] in REPAIRABLE and positions.key(g["position"]) > positions.key(through)]
        return sorted(fresh, key=lambda g: positions.key(g["position"]))[:MAX_PER_RUN]

    async def run(self, through: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
        filled: list[str] = []
        failed: list[str] = []
        last = through
        for gap in await self.pending(through):
            found = await (self._retry(gap) if gap["gap_type"] == "C" else self._synonym(gap))
            (filled if found else failed).append(gap["gap_id"])
            last = gap["position"]
        return {"attempted": len(filled) + len(failed), "filled": filled, "not_filled": failed}, {"through": last}

    async def _retry(self, gap: dict[str, Any]) -> bool:
        scope = await default_scope(self.store, gap["agent"])
        hits = []
        for query in gap["queries"]:
            found = await self.recall.recall(RecallRequest(query, scope, top_k=20, diversity=0.0))
            hits.append([h.memory_id for h in found if h.score >= MISS_FLOOR])
        return await self._close(gap, "retry", hits, f"found in the default scope {', '.join(scope)}")

    async def _synonym(self, gap: dict[str, Any]) -> bool:
        candidate = (gap.get("evidence") or {}).get("memory_id")
        rows = await self.recall.rows([candidate]) if candidate else {}
        row = rows.get(candidate)
        if row is None:
            return False
        pair = await self._nearest_terms(gap["queries"], row["content"])
        if pair is None:
            return False
        term, synonym = pair
        event = new_event(SynonymAdded(term, (synonym,), row["namespace"]), ns=row["namespace"], agent="system",
                          by="scheduler")
        res = await self.store.append([event])
        await self.waiter.wait(["synonyms"], res.position, SYNONYM_WAIT_S)
        hits = []
        for query, scope, min_score in zip(gap["queries"], gap["namespaces"], gap["min_scores"]):
            floor = max(MISS_FLOOR, min_score if min_score is not None else MISS_FLOOR)
            found = await self.recall.recall(RecallRequest(query, list(scope), top_k=10, min_score=min_score))
            hits.append([h.memory_id for h in found if h.score >= floor])
        return await self._close(gap, "synonym", hits, f"synonym {term} -> {synonym} ({row['namespace']})")

    async def _nearest_terms(self, queries: list[str], content: str) -> tuple[str, str] | None:
        stop = STOP_WORDS | QUERY_STOP_WORDS
        asked = list(dict.fromkeys(t for q in queries for t in tokens(q) if len(t) > 1 and t not in stop))
        have = list(dict.fromkeys(t for t in tokens(content) if len(t) > 1 and t not in stop))
        asked = [t for t in asked if t not in have]
        offered = [t for t in have if t not in asked]
        if not asked or not offered:
            return None
        vectors = await asyncio.gather(*(self.recall.queries.vector(t) for t in [*asked, *offered]))
        a, b = np.stack(vectors[: len(asked)]), np.stack(vectors[len(asked):])
        sims = a @ b.T
        i, j = np.unravel_index(int(np.argmax(sims)), sims.shape)
        return asked[int(i)], offered[int(j)]

    async def _close(self, gap: dict[str, Any], repair: str, hits: list[list[str]], detail: str) -> bool:
        answered = [h for h in hits if h]
        if not answered:
            return False
        ids = tuple(dict.fromkeys(mid for h in answered for mid in h))[:10]
        ns = gap["namespaces"][-1][0] if gap["namespaces"] and gap["namespaces"][-1] else SHARED_NAMESPACE
        await self.store.append([new_event(GapFilled(gap["gap_id"], repair, len(answered), ids, detail[:500],
                                                     gap["agent"], gap["query"]),
                                           ns=ns, agent="system", by="scheduler")])
        return True
