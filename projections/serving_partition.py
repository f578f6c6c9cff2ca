"""One namespace of the serving index (`projections.serving_index`): its live rows, vectors,
BM25 index and context neighbours, by slot.

Slots are append-only: a changed row is removed (its slot goes dead) and added again at the end,
so rows below a size never change (IVF training reads a snapshot of them in a worker thread).
Rows must be added in commit order: that order defines the context neighbours.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from projections.lexical_index import BM25Params, LexicalIndex
from projections.topk import top_hits
from projections.vector_index import Ivf, IvfParams, exact_top, train_ivf

__all__ = ["COMPACT_MIN_DEAD", "SESSION_GAP_MS", "Partition"]

#: Two memories are context neighbours when one agent committed them one after the other into the
#: same namespace, at most this far apart (one conversation, one batch).
SESSION_GAP_MS = 30 * 60 * 1000
COMPACT_MIN_DEAD = 1000  # rebuild a namespace once it holds more dead slots than this and than live ones


class Partition:
    """One namespace: rows by slot (append-only; a changed row gets a new slot)."""

    def __init__(self, namespace: str, dim: int, bm25: BM25Params) -> None:
        self.namespace = namespace
        self.dim = dim
        self.ids: list[str] = []
        self.origin: list[tuple[str, int]] = []        # (agent, commit ms) by slot
        self.rows: list[dict[str, Any] | None] = []
        self.vectors = np.zeros((64, dim), dtype=np.float32)
        self.live = np.zeros(64, dtype=bool)
        # context neighbours by slot, one and two steps away (-1: none)
        self.prev, self.next, self.prev2, self.next2 = (np.full(64, -1, dtype=np.int32) for _ in range(4))
        self._last: tuple[str, int] | None = None      # (agent, commit ms) of the last slot
        self.size = 0
        self.live_count = 0
        self.lexical = LexicalIndex(bm25)
        self.ivf: Ivf | None = None
        self.training = False

    def add(self, row: dict[str, Any], vector: np.ndarray, row_terms: list[str], agent: str = "",
            commit_ms: int = 0) -> int:
        """Append a row; rows must arrive in commit order (that order defines context neighbours)."""
        slot = self.size
        if slot == len(self.live):
            cap = 2 * len(self.live)
            vectors = np.zeros((cap, self.dim), dtype=np.float32)
            vectors[:slot] = self.vectors[:slot]
            live = np.zeros(cap, dtype=bool)
            live[:slot] = self.live[:slot]
            links = []
            for old in (self.prev, self.next, self.prev2, self.next2):
                grown = np.full(cap, -1, dtype=np.int32)
                grown[:slot] = old[:slot]
                links.append(grown)
            self.vectors, self.live = vectors, live  # old arrays stay valid for a training snapshot
            self.prev, self.next, self.prev2, self.next2 = links
        if self._last is not None and self._last[0] == agent and 0 <= commit_ms - self._last[1] <= SESSION_GAP_MS:
            self.prev[slot] = slot - 1
            self.next[slot - 1] = slot
            before = self.prev[slot - 1]
            if before >= 0:
                self.prev2[slot] = before
                self.next2[before] = slot
        self._last = (agent, commit_ms)
        self.origin.append(self._last)
        self.vectors[slot] = vector
        self.live[slot] = True
        self.ids.append(row["id"])
        self.rows.append(row)
        self.lexical.add(slot, row_terms)
        self.size += 1
        self.live_count += 1
        return slot

    def remove(self, slot: int) -> None:
        if self.live[slot]:
            self.live[slot] = False
            self.rows[slot] = None
            self.lexical.remove(slot)
            self.live_count -= 1

    def lexical_search(self, query_terms: list[str], k: int, context: float) -> list[tuple[int, float]]:
        """BM25 top `k`; with `context` > 0 each memory also scores `context` x the best of its two
        neighbours and `context` / 2 x the best of the next two out (a question's answer is often
        the turn after the one that matches it). Only matches and their neighbours are scored."""
        scores = self.lexical.scores(query_terms)
        if scores is None:
            return []
        n = self.size
        live = self.live[:n]
        if context > 0.0 and np.count_nonzero(scores[:n]) * 16 > n:
            # many matches: one pass over every slot, no index arrays
            own = np.zeros(n + 1, dtype=np.float32)   # own[-1] == 0: "no neighbour"
            np.multiply(scores[:n], live, out=own[:n])  # removed memories neither match nor lend context
            smoothed = own[self.prev[:n]]
            np.maximum(smoothed, own[self.next[:n]], out=smoothed)
            smoothed *= np.float32(context)
            two = own[self.prev2[:n]]
            np.maximum(two, own[self.next2[:n]], out=two)
            two *= np.float32(0.5 * context)
            smoothed += two
            smoothed += own[:n]
            smoothed *= live
            return top_hits(None, smoothed, k)
        scores = scores[:n]
        hits = np.flatnonzero(scores)
        hits = hits[live[hits]]
        if context <= 0.0 or len(hits) == 0:
            return top_hits(hits, scores[hits], k)
        prev, nxt, prev2, nxt2 = self.prev[:n], self.next[:n], self.prev2[:n], self.next2[:n]
        own = np.zeros(n + 1, dtype=np.float32)
        own[hits] = scores[hits]
        near = np.zeros(n + 1, dtype=bool)            # few: just the matches and their neighbours
        for links in (prev, nxt, prev2, nxt2):
            near[links[hits]] = True                  # (-1, "no neighbour", marks the spare slot n)
        near[hits] = True
        cand = np.flatnonzero(near[:n] & live)
        smoothed = (own[cand] + context * np.maximum(own[prev[cand]], own[nxt[cand]])
                    + (0.5 * context) * np.maximum(own[prev2[cand]], own[nxt2[cand]]))
        keep = smoothed > 0.0
        return top_hits(cand[keep], smoothed[keep], k)

    def wants_compaction(self) -> bool:
        dead = self.size - self.live_count
        return dead > COMPACT_MIN_DEAD and dead > self.live_count

    def dense(self, query: np.ndarray, k: int, ivf: IvfParams) -> list[tuple[int, float]]:
        if self.ivf is not None:
            return self.ivf.search(self.vectors, self.size, query, k, self.live, ivf)
        return exact_top(self.vectors[: self.size], query, k, self.live)

    def wants_ivf(self, params: IvfParams) -> bool:
        if self.training or self.live_count < params.min_rows:
            return False
        return self.ivf is None or self.ivf.stale(self.size, params)

    def train(self, params: IvfParams) -> Ivf:
        """Run in a worker thread over a snapshot (rows below `size` never change)."""
        size = self.size
        return train_ivf(self.vectors[:size], self.live[:size].copy(), params)
