"""Knowledge-gap detection (seed 3.2.2, flow 3), a reaction to the recall audits.

Per agent it holds candidate topics (`commands.learning.gaps.Topic`): a miss is embedded (the recall just
embedded the same query: the query vectors' LRU answers; a query this process did not embed lately is
embedded within a budget of EMBED_BUDGET a second, beyond which the recall is not counted) and joins the
first topic whose first query has cosine >= 0.8, or starts one; a hit on a topic clears its misses (three misses "with no hit
between"). The third miss within 24 h opens a gap: it is classified at once (the recall service over
the missed scope and the agent's default scope) and recorded as `gap.detected`. Misses on the topic of
an open gap open no other; a later hit on it closes it (`gap.filled`, repair `answered`).

The topics live in this process's memory, bounded (MAX_TOPICS per agent, the least recently missed
dropped first): a restart forgets misses that had not yet opened a gap. Open gaps are reloaded from the
learning projection. Time is the events' own (their HLC), never the clock.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from commands.learning.gaps import (
    MISS_FLOOR, SUGGESTIONS, TOPIC_COSINE, Candidate, Topic, classify, default_scope, is_miss,
)
from events.catalogue import GapDetected, GapFilled, RecallServed, new_event
from events.envelope import Event
from events.vocabulary import SHARED_NAMESPACE
from projections.queries.recall.service import RecallRequest
from projections.text.lexical import index_text, query_text, terms

MAX_TOPICS = 256            # per agent
SEARCH_TOP_K = 10
EMBED_BUDGET = 10           # queries embedded per second of log time when their recall's vector is not held


@dataclass
class GapWatchPolicy:
    recall: Any          # projections.queries.recall.service.RecallService (and its query vectors)
    store: Any           # events.redis.store.EventStore: the agents' namespaces
    learning: Any        # projections.learning.reader.LearningReader: open gaps, at start
    name: str = "gap_watch"
    reads: tuple[str, ...] = ()
    _topics: dict[str, list[Topic]] = field(default_factory=dict)
    _open: dict[str, list[tuple[str, Any, str]]] | None = None   # agent -> [(gap id, first query's vector, it)]
    skipped: int = 0                                              # recalls over the embedding budget
    _budget_second: int = -1
    _budget_left: int = 0

    def wants(self, event: Event) -> bool:
        return isinstance(event.data, (RecallServed, GapFilled)) and event.agent not in ("", "admin")

    async def decide(self, event: Event) -> list[Event]:
        if self._open is None:
            await self._load_open()
        assert self._open is not None
        d = event.data
        if isinstance(d, GapFilled):
            for gaps in self._open.values():
                gaps[:] = [g for g in gaps if g[0] != d.gap_id]
            return []
        agent = event.agent
        miss = is_miss(d.scores, d.min_score)
        topics = self._topics.get(agent)
        if not miss and not topics and not self._open.get(agent):
            return []                                   # a hit with nothing pending: nothing to learn
        vector = await self._vector(d.query, event.wall_ms)
        if vector is None:
            self.skipped += 1                           # over the embedding budget: this recall is not counted
            return []
        if not miss:
            return self._hit(agent, vector, d)
        if any(float(first @ vector) >= TOPIC_COSINE for _, first, _ in self._open.get(agent, [])):
            return []                                   # its gap is open already: one gap per topic
        topics = self._topics.setdefault(agent, [])
        topic = None
        if topics:            # one product for all of the agent's topics (up to MAX_TOPICS)
            sims = np.stack([t.vector for t in topics]) @ vector
            best = int(np.argmax(sims))
            topic = topics[best] if sims[best] >= TOPIC_COSINE else None
        if topic is None:
            topic = Topic(d.query, vector)
            topics.append(topic)
        ms = event.wall_ms
        opened = topic.note_miss(ms, d.query, tuple(d.namespaces), d.min_score)
        topics.sort(key=lambda t: t.misses[-1][0] if t.misses else 0, reverse=True)
        del topics[MAX_TOPICS:]
        if not opened:
            return []
        topics.remove(topic)
        return [await self._open_gap(event, topic)]

    def _hit(self, agent: str, vector: Any, d: RecallServed) -> list[Event]:
        for topic in self._topics.get(agent, []):
            if topic.matches(vector):
                topic.misses.clear()
        out = []
        gaps = self._open.get(agent, []) if self._open is not None else []
        for gap_id, first, query in list(gaps):
            if float(first @ vector) >= TOPIC_COSINE:
                gaps.remove((gap_id, first, query))
                found = tuple(mid for mid, s in zip(d.result_ids, d.scores) if s >= MISS_FLOOR)
                out.append(new_event(GapFilled(gap_id, "answered", 1, found[:10], f"recall: {d.query[:200]}",
                                               agent, query),
                                     ns=d.namespaces[0] if d.namespaces else SHARED_NAMESPACE,
                                     agent="system", by="reaction"))
        return out

    async def _vector(self, query: str, at_ms: int) -> Any:
        """The query's vector: the one its recall just embedded when this process served it (the query
        vectors' LRU), else embedded within EMBED_BUDGET per second of log time (recalls served by another
        gateway, a backlog of audits, a log replayed into the reactions), else None."""
        held = self.recall.queries.cached(query)
        if held is not None:
            return held
        second = at_ms // 1000
        if second != self._budget_second:
            self._budget_second, self._budget_left = second, EMBED_BUDGET
        if self._budget_left <= 0:
            return None
        self._budget_left -= 1
        return await self.recall.queries.vector(query)

    async def _open_gap(self, event: Event, topic: Topic) -> Event:
        queries = [m[1] for m in topic.misses]
        namespaces = [m[2] for m in topic.misses]
        min_scores = [m[3] for m in topic.misses]
        gap_type, evidence = await self._classify(event.agent, queries, namespaces, min_scores)
        gap_id = str(uuid.uuid4())
        payload = GapDetected(gap_id, event.agent, topic.first, gap_type, tuple(queries), tuple(namespaces),
                              tuple(min_scores), SUGGESTIONS[gap_type], evidence, event.wall_ms)
        if self._open is not None:
            self._open.setdefault(event.agent, []).append((gap_id, topic.vector, topic.first))
        return new_event(payload, ns=namespaces[-1][0] if namespaces[-1] else SHARED_NAMESPACE, agent="system",
                         by="reaction")

    async def _classify(self, agent: str, queries: list[str], namespaces: list[tuple[str, ...]],
                        min_scores: list[float | None]) -> tuple[str, dict[str, Any]]:
        default = await default_scope(self.store, agent)
        searched: list[Candidate] = []
        default_hits: list[Candidate] = []
        missed = {ns for scope in namespaces for ns in scope}
        for query, scope in zip(queries, namespaces):
            searched += await self._search(query, list(scope) or default)
            default_hits += [c for c in await self._search(query, default) if c.score >= MISS_FLOOR]
        query_terms = frozenset(t for q in queries for t in terms(query_text(q)))
        gap_type, evidence = classify(query_terms, searched, default_hits, missed, min_scores)
        evidence["queries"] = len(queries)
        return gap_type, evidence

    async def _search(self, query: str, namespaces: list[str]) -> list[Candidate]:
        hits = await self.recall.recall(RecallRequest(query, namespaces, top_k=SEARCH_TOP_K, diversity=0.0))
        return [Candidate(h.memory_id, h.namespace, float(h.score), float(h.similarity),
                          frozenset(terms(index_text(h.content)))) for h in hits]

    async def _load_open(self) -> None:
        self._open = {}
        for gap in await asyncio.to_thread(self.learning.gaps, "open"):
            vector = await self.recall.queries.vector(gap["query"])
            self._open.setdefault(gap["agent"], []).append((gap["gap_id"], vector, gap["query"]))
