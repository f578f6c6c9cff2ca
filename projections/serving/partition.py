"""One namespace of the serving index (`projections.serving.index`): its live rows, vectors,
BM25 index and context neighbours, by slot.

Slots are append-only: a changed row is removed (its slot goes dead) and added again at the end,
so rows below a size never change (IVF training reads a snapshot of them in a worker thread).
Rows must be added in commit order: that order defines the context neighbours.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from projections.serving.bm25 import BM25Params, LexicalIndex
from projections.serving.topk import top_hits
from projections.serving.dense import Ivf, IvfParams, exact_top, train_ivf

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
        # context neighbours by slot: a slot's neighbours are always the adjacent slots (rows arrive in
        # commit order), so 1.0 / 0.0 flags say whether slot -1, +1, -2, +2 is one; searches then read
        # shifted slices instead of gathering through index arrays
        self.has_prev, self.has_next, self.has_prev2, self.has_next2 = (np.zeros(64, dtype=np.float32)
                                                                        for _ in range(4))
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
            for old in (self.has_prev, self.has_next, self.has_prev2, self.has_next2):
                grown = np.zeros(cap, dtype=np.float32)
                grown[:slot] = old[:slot]
                links.append(grown)
            self.vectors, self.live = vectors, live  # old arrays stay valid for a training snapshot
            self.has_prev, self.has_next, self.has_prev2, self.has_next2 = links
        if self._last is not None and self._last[0] == agent and 0 <= commit_ms - self._last[1] <= SESSION_GAP_MS:
            self.has_prev[slot] = 1.0
            self.has_next[slot - 1] = 1.0
            if self.has_prev[slot - 1]:
                self.has_prev2[slot] = 1.0
                self.has_next2[slot - 2] = 1.0
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
        if context <= 0.0:
            if np.count_nonzero(scores[:n]) * 16 > n:
                return top_hits(None, scores[:n] * live, k)
            hits = np.flatnonzero(scores[:n])
            hits = hits[live[hits]]
            return top_hits(hits, scores[hits], k)
        # own[s + 2] = slot s's own score (0 when removed); two zeros either side stand in for "none"
        own = np.zeros(n + 4, dtype=np.float32)
        if np.count_nonzero(scores[:n]) * 16 > n:
            # many matches: one pass over every slot, contiguous slices only
            np.multiply(scores[:n], live, out=own[2:n + 2])
            smoothed = own[1:n + 1] * self.has_prev[:n]
            np.maximum(smoothed, own[3:n + 3] * self.has_next[:n], out=smoothed)
            smoothed *= np.float32(context)
            two = own[0:n] * self.has_prev2[:n]
            np.maximum(two, own[4:n + 4] * self.has_next2[:n], out=two)
            two *= np.float32(0.5 * context)
            smoothed += two
            smoothed += own[2:n + 2]
            smoothed *= live
            return top_hits(None, smoothed, k)
        hits = np.flatnonzero(scores[:n])
        hits = hits[live[hits]]
        if len(hits) == 0:
            return []
        own[hits + 2] = scores[hits]
        near = np.zeros(n + 4, dtype=bool)            # few: just the matches and their neighbours
        for step, flags in ((-1, self.has_prev), (1, self.has_next), (-2, self.has_prev2), (2, self.has_next2)):
            near[hits[flags[hits] > 0] + (step + 2)] = True
        near[hits + 2] = True
        cand = np.flatnonzero(near[2:n + 2] & live)
        smoothed = (own[cand + 2]
                    + context * np.maximum(own[cand + 1] * self.has_prev[cand], own[cand + 3] * self.has_next[cand])
                    + (0.5 * context) * np.maximum(own[cand] * self.has_prev2[cand],
                                                   own[cand + 4] * self.has_next2[cand]))
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
