"""Recall (seed 2.6): encode -> dense ANN + full-text (namespace prefilter, top `pool` each)
-> fusion -> optional rerank -> relevance floor -> MMR -> shared fallback -> annotations.

- Source: the serving index (`projections.serving.index`, in memory, up to the projection's
  checkpoint); LanceDB itself while that index loads.
- Dense: cosine over the memories' vectors (exact, or IVF once a namespace is big).
- Lexical: BM25 over `search_text` (`projections.text.lexical`: Chinese-aware terms), the query
  expanded with the synonyms projection; `context` > 0 lets each memory borrow from the
  scores of the memories committed just before and after it (same agent, same session).
- Fusion: `projections.queries.recall.fusion.fuse` (an absolute score in [0, 1] from calibrated cosine and
  saturated BM25 evidence; measured to beat RRF on LoCoMo), so `min_score` is a relevance floor
  comparable across queries; `similarity` (the raw cosine) is reported beside it.
- Rerank: only when a reranker is configured (the bge-reranker HTTP provider, or the local e5
  one by opt-in); its score replaces the fused one for the top `rerank_top` candidates.
- Standing (`projections.memories.scores`): each candidate's score is scaled by its importance, quality
  and decay at the clock's now (`importance_weight`, 0 = relevance only): low-quality and
  long-idle memories sink, useful and often recalled ones rise; stale ones are marked.
- MMR: `diversity` 0..1 (0 = relevance order).
- Shared fallback (plan E4.2): when the request narrows to a private namespace and fewer than
  3 results pass, up to 5 `shared` hits are appended with their score x 0.5, marked.
- Graph expansion (plan E1): when fewer than 5 results pass, the memories one hop from the hits
  in the knowledge graph (DEPENDS_ON, CO_OCCURS, a shared entity) are added, marked, with the
  score of the hit they came from x the edge weight x 0.5; `prefetch` lists the CO_OCCURS
  partners (weight > 0.6) of the top 3 results.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from events.clock import SystemClock
from events.vocabulary import SHARED_NAMESPACE
from projections.core.errors import InvalidQuery
from projections.queries.recall.fusion import DEFAULT, FusionParams, fuse, lexically_blind, script_of
from projections.queries.recall.hits import Candidate, RecallHit
from projections.queries.recall.mmr import DEFAULT_DIVERSITY, mmr
from projections.memories.reader import MAX_LIMIT, MemoriesReader, valid_namespaces
from projections.memories.scores import DEFAULT_RANK_WEIGHT, ranked_score, scores_of, value_now, valued_standing
from projections.models.query_vectors import QueryVectors
from projections.serving.index import ServingIndex
from projections.text.lexical import index_text, query_text, terms

FALLBACK_BELOW = 3     # E4.2: fewer results than this in a private namespace -> add shared ones
FALLBACK_COUNT = 5
FALLBACK_FACTOR = 0.5
GRAPH_EXPAND_BELOW = 5   # plan E1: fewer results than this -> expand one hop through the graph
GRAPH_FACTOR = 0.5
#: Weight of a memory's context neighbours in its lexical score (`projections.serving.partition`:
#: the memories of its episode, or adjacent commits of a stream that is evidently one conversation):
#: tuned on LoCoMo conv-26/30; worth ~8.5 points of recall@5 over all five conversations, one per
#: namespace (64.1 vs 55.6, tests/bench/locomo.py --layouts a); 0 turns it off.
DEFAULT_CONTEXT = 0.6
#: How many of the best dense candidates are checked for a script other than the query's.
BLIND_TOP = 20


def _cosine(vec: np.ndarray, query: np.ndarray) -> float:
    """float(np.clip(vec @ query, -1, 1)), without np.clip's dispatch cost (a few us a call)."""
    return min(1.0, max(-1.0, float(vec @ query)))


@dataclass(frozen=True, slots=True)
class RecallRequest:
    query: str
    namespaces: list[str]
    top_k: int = 10
    min_score: float | None = None
    diversity: float = DEFAULT_DIVERSITY
    shared_fallback: bool = False
    context: float = DEFAULT_CONTEXT
    importance_weight: float = DEFAULT_RANK_WEIGHT

    def validated(self) -> "RecallRequest":
        if not isinstance(self.query, str) or not self.query.strip():
            raise InvalidQuery("query must be a non-empty string")
        if not 0 < self.top_k <= MAX_LIMIT:
            raise InvalidQuery(f"top_k must be in 1..{MAX_LIMIT}, got {self.top_k}")
        if self.min_score is not None and not -1.0 <= self.min_score <= 1.0:
            raise InvalidQuery(f"min_score must be in [-1, 1], got {self.min_score}")
        if not 0.0 <= self.diversity <= 1.0:
            raise InvalidQuery(f"diversity must be in [0, 1], got {self.diversity}")
        if not 0.0 <= self.context <= 1.0:
            raise InvalidQuery(f"context must be in [0, 1], got {self.context}")
        if not 0.0 <= self.importance_weight <= 1.0:
            raise InvalidQuery(f"importance_weight must be in [0, 1], got {self.importance_weight}")
        return RecallRequest(self.query, valid_namespaces(self.namespaces), self.top_k, self.min_score,
                             self.diversity, self.shared_fallback, self.context, self.importance_weight)


class RecallService:
    """`serving`: hold the in-memory serving index over the reader's folder (the memories projection);
    the service owns it: `load()` starts loading it, `reload()` follows a swapped folder, `close()`
    releases it. Without it, LanceDB serves every recall."""

    def __init__(self, reader: MemoriesReader, embedder: Any, *, synonyms: Any = None, reranker: Any = None,
                 fusion: FusionParams = DEFAULT, rerank_top: int = 20, serving: bool = False, activity: Any = None,
                 clock: Any = None, graph: Any = None, query_embedder: Any = None, partners: Any = None,
                 rates: Any = None, values: Any = None) -> None:
        self.reader = reader
        self.index = ServingIndex(reader.directory) if serving else None
        # queries may have their own embedder (the same model in a child process: gateway.process.wiring)
        self.queries = QueryVectors(query_embedder if query_embedder is not None else embedder)
        self.synonyms = synonyms      # .expansions(query, namespaces) -> list[str]
        self.reranker = reranker      # projections.models.rerank.Reranker or None
        self.fusion = fusion
        self.rerank_top = rerank_top
        self.activity = activity      # .recalls(ids): queries.activity.RecallCounts (in memory) or ActivityReader
        self.clock = clock or SystemClock()   # events.clock.Clock: `now` of the derived scores
        self.graph = graph            # projections.graph.reader.GraphReader: expansion, prefetch
        self.partners = partners      # projections.serving.prefetch.PrefetchPartners: prefetch in memory
        self.rates = rates            # .get() -> calibrated decay rates (projections.consolidation.reader.DecayRates)
        self.values = values          # .values(ids): V-values (projections.learning.reader.MemoryValues / LearningReader)

    @property
    def fingerprint(self) -> str:
        """What the answers depend on besides the data (part of search-cache keys)."""
        rr = getattr(self.reranker, "model_id", "none") if self.reranker is not None else "none"
        bm25 = getattr(self.index, "bm25", "lancedb")
        return f"v3|{self.queries.model_id}|{self.fusion}|{bm25}|{rr}|{self.rerank_top}"

    async def load(self, *, wait: bool = False) -> None:
        """Start loading the serving index (LanceDB serves meanwhile); `wait`: until it serves."""
        if self.index is not None:
            await (self.index.wait_ready() if wait else self.index.refresh())

    async def reload(self) -> None:
        """The projection folder was swapped (`zhiyi replay --in-place`): drop the index, load the new one."""
        if self.index is not None:
            await self.index.close()
            await self.index.refresh()

    async def close(self) -> None:
        if self.index is not None:
            await self.index.close()

    async def recall(self, req: RecallRequest) -> list[RecallHit]:
        req = req.validated()
        if not req.namespaces:
            return []
        source = await self._source()
        extra = self._expansions(req.query, req.namespaces)     # once per recall: the synonyms' check costs
        text = self._lexical_query(req.query, req.namespaces, extra)
        lexical = asyncio.ensure_future(self._lexical(source, req, req.namespaces, text))  # overlaps the embedding
        try:
            # synonyms reach the meaning too: a query naming something by another name ("where does k8s run")
            # is embedded with the names its synonyms give it appended ("... kubernetes"; measured with the
            # default model: cosine 0.19 -> 0.34 with the memory naming it so; in parentheses only 0.22)
            vector = await self.queries.vector(" ".join([req.query, *extra]) if extra else req.query)
        except BaseException:
            lexical.cancel()
            raise
        ranked = await self._ranked(source, req, vector, req.namespaces, self._needed(req), lexical, text)
        chosen = self._diversify(ranked, req.top_k, req.diversity)
        if req.shared_fallback and len(chosen) < FALLBACK_BELOW and SHARED_NAMESPACE not in req.namespaces:
            chosen += await self._fallback(source, req, vector, {c.row["id"] for c in chosen})
        if self.graph is not None and chosen and len(chosen) < min(GRAPH_EXPAND_BELOW, req.top_k):
            chosen += await self._expand(source, req, chosen)
        return [c.hit() for c in chosen[: req.top_k]]

    async def neighbours(self, text: str, namespaces: list[str], limit: int) -> list[tuple[dict[str, Any], float]]:
        """The stored memories nearest `text`: the dense and the lexical top `limit` (no rerank, no
        standing), each row (RESULT_COLUMNS) with its cosine to `text`. What a new memory is compared
        with (`commands.conflicts`)."""
        req = RecallRequest(query=text, namespaces=namespaces, top_k=limit, diversity=0.0, context=0.0).validated()
        if not req.namespaces:
            return []
        source = await self._source()
        lexical = asyncio.ensure_future(self._lexical(source, req, req.namespaces))
        try:
            vector = await self.queries.vector(text)
        except BaseException:
            lexical.cancel()
            raise
        dense = await source.adense(vector, req.namespaces, limit)
        ids = list(dict.fromkeys([mid for mid, _ in dense] + [mid for mid, _ in (await lexical)[:limit]]))
        rows = await source.arows(ids, vectors=True)
        out = []
        for mid in ids:
            row = rows.get(mid)
            if row is not None:
                vec = row.pop("vector")
                out.append((row, _cosine(vec, vector)))
        return out

    async def holds(self, namespaces: list[str]) -> bool:
        """Whether any of `namespaces` holds a live memory (the serving index once loaded; before that,
        whether the table exists at all)."""
        source = await self._source()
        if source is self.index and self.index is not None:
            return self.index.holds(namespaces)
        return await self.reader.aexists()

    async def rows(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """The live memories' rows (RESULT_COLUMNS) of `ids`, from the serving index or LanceDB."""
        return await (await self._source()).arows(ids)

    async def _expand(self, source: Any, req: RecallRequest, chosen: list[Candidate]) -> list[Candidate]:
        """One hop through the knowledge graph from the hits (plan E1)."""
        by_id = {c.row["id"]: c for c in chosen}
        near = await asyncio.to_thread(self.graph.neighbours, list(by_id), req.namespaces,
                                       req.top_k - len(chosen))
        if not near:
            return []
        rows = await source.arows([n.memory_id for n in near], vectors=True)
        out = []
        for n in near:
            row = rows.get(n.memory_id)
            if row is None or row.get("namespace") not in req.namespaces:
                continue
            vec = row.pop("vector")
            how = f"{n.relation}:{n.entity}" if n.entity else n.relation
            out.append(Candidate(row, vec, by_id[n.via].score * n.weight * GRAPH_FACTOR, 0.0,
                                 via=f"{n.via} ({how})"))
        return self._stand(out, 0.0)

    async def prefetch(self, memory_ids: list[str], namespaces: list[str], limit: int = 5) -> list[dict[str, Any]]:
        """CO_OCCURS partners (weight > 0.6) of the results: what the agent will likely ask next."""
        if self.graph is None or not memory_ids:
            return []
        near = self.partners.prefetch(memory_ids, namespaces, limit=limit) if self.partners is not None else None
        if near is None:  # not loaded yet: on the loop, indexed lookups cost less than a thread hop under load
            near = self.graph.prefetch(memory_ids, namespaces, limit=limit)
        if not near:
            return []
        source = await self._source()
        rows = await source.arows([n.memory_id for n in near])
        readable = set(namespaces)
        return [{"memory_id": n.memory_id, "content": row["content"], "namespace": row["namespace"],
                 "weight": round(n.weight, 6), "with": n.via}
                for n in near if (row := rows.get(n.memory_id)) is not None and row["namespace"] in readable]

    def _needed(self, req: RecallRequest) -> int:
        """How many fused candidates to materialise: MMR wants a choice, rerank its head."""
        need = req.top_k if req.diversity == 0.0 else max(2 * req.top_k, 20)
        if self.reranker is not None:
            need = max(need, self.rerank_top)
        return min(need, self.fusion.pool * 2)

    async def _source(self) -> Any:
        """The serving index once it is loaded and up to the projection's checkpoint, else LanceDB."""
        if self.index is not None and await self.index.refresh():
            return self.index
        return self.reader

    async def _lexical(self, source: Any, req: RecallRequest, namespaces: list[str],
                       text: str | None = None) -> list[tuple[str, float]]:
        text = self._lexical_query(req.query, namespaces) if text is None else text
        return await source.alexical(text, namespaces, self.fusion.pool, context=req.context)

    async def _ranked(self, source: Any, req: RecallRequest, vector: np.ndarray, namespaces: list[str], need: int,
                      lexical_task: "asyncio.Future[list[tuple[str, float]]] | None" = None,
                      text: str | None = None) -> list[Candidate]:
        text = self._lexical_query(req.query, namespaces) if text is None else text
        lexical_task = lexical_task or asyncio.ensure_future(self._lexical(source, req, namespaces, text))
        dense = await source.adense(vector, namespaces, self.fusion.pool)   # no task: nothing in it waits
        lexical = await lexical_task
        # BM25 is summed over the query's terms: the fusion reads it per term; memories in another
        # script than the query's cannot match a word of it, so their cosine alone may carry them
        # (a synonym's expansion is another name of a query term, not one more term to match)
        n_terms = len(terms(query_text(req.query)) or terms(text)) if lexical else 1
        # the best dense rows are read once: for the script check and, most of them, as the head's rows
        blind, rows = await self._blind(source, req.query, dense) if lexical else (set(), {})
        fused = fuse(dense, lexical, params=self.fusion, query_terms=n_terms, blind=blind)
        if self.reranker is None and req.min_score is not None:
            fused = [f for f in fused if f[1] >= req.min_score]
        head = fused[:need]
        missing = [mid for mid, _ in head if mid not in rows]
        if missing:
            rows.update(await source.arows(missing, vectors=True))
        cosine = dict(dense)
        out = []
        for mid, score in head:
            row = rows.get(mid)
            if row is None:  # deleted between the search and the fetch
                continue
            vec = row.pop("vector")
            sim = cosine.get(mid)
            out.append(Candidate(row, vec, score, _cosine(vec, vector) if sim is None else sim))
        if self.reranker is not None and out:
            out = await self._rerank(req.query, out)
            if req.min_score is not None:
                out = [c for c in out if c.score >= req.min_score]
        return self._stand(out, req.importance_weight)

    async def _blind(self, source: Any, query: str,
                     dense: list[tuple[str, float]]) -> tuple[set[str], dict[str, dict[str, Any]]]:
        """The best dense candidates written in another script than the query (fusion.lexically_blind),
        and the rows read to tell (with their vectors: most of them are the fused head's rows too)."""
        script = script_of(query)
        if script not in ("zh", "en") or not dense:
            return set(), {}
        rows = await source.arows([mid for mid, _ in dense[:BLIND_TOP]], vectors=True)
        return {mid for mid, row in rows.items() if lexically_blind(script, row.get("content") or "")}, rows

    def _stand(self, cands: list[Candidate], weight: float) -> list[Candidate]:
        """Derived scores of each candidate at now; the score scaled by its standing, re-sorted."""
        if not cands:
            return cands
        now = self.clock.now_ms()
        ids = [c.row["id"] for c in cands]
        recalls = self.activity.recalls(ids) if self.activity is not None else {}
        valued = self.values.values(ids) if self.values is not None else {}
        rates = self.rates.get() if self.rates is not None else None
        for c in cands:
            count, last = recalls.get(c.row["id"], (0, ""))
            c.scores = scores_of(c.row, now, count, last, rates)
            if valued and (v := valued.get(c.row["id"])) is not None:   # a rewarded trace valued it (seed 6.3)
                c.scores = dataclasses.replace(
                    c.scores, standing=valued_standing(c.scores.standing, value_now(v[0], v[1], now)))
            if weight:
                c.score = ranked_score(c.score, c.scores.standing, weight)
        if weight:
            cands.sort(key=lambda c: (-c.score, c.row["id"]))
        return cands

    def _expansions(self, query: str, namespaces: list[str]) -> list[str]:
        return list(self.synonyms.expansions(query, namespaces)) if self.synonyms is not None else []

    def _lexical_query(self, query: str, namespaces: list[str], extra: list[str] | None = None) -> str:
        text = query_text(query)
        if extra is None:
            extra = self._expansions(query, namespaces)
        if not extra:
            return text
        return " ".join([text, *(index_text(term) for term in extra)]).strip()

    async def _rerank(self, query: str, cands: list[Candidate]) -> list[Candidate]:
        head, tail = cands[: self.rerank_top], cands[self.rerank_top:]
        scores = await self.reranker.rerank(query, [c.row["content"] for c in head])
        for c, s in zip(head, scores):
            c.score = float(s)
        head.sort(key=lambda c: (-c.score, c.row["id"]))
        floor = head[-1].score if head else 0.0
        for c in tail:  # keep the reranked head above the unreranked tail
            c.score = min(c.score, floor)
        return head + tail

    @staticmethod
    def _diversify(cands: list[Candidate], k: int, diversity: float) -> list[Candidate]:
        if not cands:
            return []
        if diversity == 0.0:
            return cands[:k]
        scores = np.array([c.score for c in cands], dtype=np.float32)
        span = float(scores.max() - scores.min())
        # MMR trades relevance against novelty on one scale: spread this query's absolute scores over
        # [0, 1] first, or the novelty term dominates (measured on LoCoMo: recall@5 44.5 -> 52+ at 0.5).
        relevance = (scores - scores.min()) / span if span > 0 else np.ones_like(scores)
        order = mmr(relevance, np.stack([c.vector for c in cands]), k, diversity)
        return [cands[i] for i in order]

    async def _fallback(self, source: Any, req: RecallRequest, vector: np.ndarray, seen: set[str]) -> list[Candidate]:
        shared = await self._ranked(source, req, vector, [SHARED_NAMESPACE], FALLBACK_COUNT + len(seen))
        out = []
        for c in shared:
            if c.row["id"] in seen:
                continue
            c.score *= FALLBACK_FACTOR
            c.fallback = True
            out.append(c)
            if len(out) == FALLBACK_COUNT:
                break
        return out
