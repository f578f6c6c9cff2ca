"""One namespace of the serving index (`projections.serving.index`): its live rows, vectors,
BM25 index and context neighbours, by slot.

Slots are append-only: a changed row is removed (its slot goes dead) and added again at the end,
so rows below a size never change (IVF training reads a snapshot of them in a worker thread).

Context neighbours are links between slots, kept as two arrays (`prev`, `next`; -1 for none):

- a memory with an episode (`derived_from`, the conversation, session or task it came from) is
  linked to the previous and next memory *of that episode* in this namespace, in commit order,
  whatever was committed in between;
- a memory without one is linked to the same agent's previous commit without one only where the
  agent's commit stream is evidently one conversation. Adjacency alone is a guess (an agent that
  interleaves several conversations, or commits independent facts, has unrelated neighbours), so
  a *run* (one agent's consecutive commits into the namespace, each at most `SESSION_GAP_MS`
  after the last) is tested: a commit's *excess* is its mean cosine to the previous two commits
  minus its mean cosine to the commits `COHERENCE_LAGS` back; once the last `COHERENCE_WINDOW`
  excesses average at least `COHERENCE`, the window's consecutive commits are linked (back to the
  run's start while it is that short). Consecutive turns of a conversation are more alike than turns
  further apart; interleaved, shuffled or independent commits are not, so they stay unlinked and
  rank exactly as with `context: 0`.

Rows must be added in commit order: that order defines the links. A changed row keeps its place in
its chain (`add(..., replacing=...)`); a removed one is spliced out (its episode neighbours become
each other's).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from projections.serving.bm25 import BM25Params, LexicalIndex
from projections.serving.dense import Ivf, IvfParams, exact_top, train_ivf
from projections.serving.rows import RowArena
from projections.serving.topk import top_hits
from projections.serving.vectors import Int8Rows

__all__ = ["COHERENCE", "COHERENCE_LAGS", "COHERENCE_NEAR", "COHERENCE_WINDOW", "COMPACT_MIN_DEAD", "SESSION_GAP_MS",
           "Partition"]

#: Without an episode, one agent's consecutive commits into one namespace form a run while each is at
#: most this long after the last (one conversation, one batch) ...
SESSION_GAP_MS = 30 * 60 * 1000
#: ... and a run's consecutive commits are linked once a commit's mean cosine to the commits
#: COHERENCE_NEAR back, minus its mean cosine to those COHERENCE_LAGS back (its *excess*), averages
#: at least COHERENCE over a window of COHERENCE_WINDOW commits. Calibrated on LoCoMo conv-26/30
#: with the offline model (USE multilingual v3): the excess of a commit averages 0.08-0.10 in
#: conversation order and 0.00 when the same turns are shuffled or interleaved (sd ~0.12 per commit);
#: over 48 commits, 0.06 links every turn of conv-26 and conv-30 in order and none of their shuffled
#: or round-robin streams (but where one conversation runs on alone), nor any of the facts bench's
#: 2,400 independent facts (tests/bench/facts.py). A run links nothing before its 56th commit.
COHERENCE_NEAR = (1, 2)
COHERENCE_LAGS = (8, 16, 32)
COHERENCE_WINDOW = 48
COHERENCE = 0.06
COMPACT_MIN_DEAD = 1000  # rebuild a namespace once it holds more dead slots than this and than live ones

_NONE = -1
_RUN_KEEP = max(COHERENCE_LAGS) + COHERENCE_WINDOW + 1


@dataclass(slots=True)
class _Run:
    """One agent's consecutive commits without an episode (see the module docstring)."""

    agent: str
    ms: int
    count: int = 0                                                              # commits in the run
    slots: deque[int] = field(default_factory=lambda: deque(maxlen=_RUN_KEEP))  # the latest ones
    excess: deque[float] = field(default_factory=lambda: deque(maxlen=COHERENCE_WINDOW))


class Partition:
    """One namespace: rows by slot (append-only; a changed row gets a new slot). Per live memory
    it holds about 1.3 KB plus the content at 512 dims: the int8 vector (516 B), its reduced row
    once IVF-partitioned (4 B a principal axis kept: 256 B for 64), the row record (~190 B), BM25
    postings (6 B each: ~330 B for the million bench's texts), the id and a few per-slot numbers
    (`tests/bench/serving_memory.py` and `tests/bench/million.py` measure it)."""

    def __init__(self, namespace: str, dim: int, bm25: BM25Params) -> None:
        self.namespace = namespace
        self.dim = dim
        self.ids: list[str] = []
        self.episode: list[str] = []                   # derived_from by slot ("" = none), interned
        self.rows = RowArena(namespace)
        self.vectors = Int8Rows(dim)
        self.live = np.zeros(64, dtype=bool)
        # context neighbours by slot (-1: none); the two-step ones are prev[prev] and next[next]
        self.prev = np.full(64, _NONE, dtype=np.int64)
        self.next = np.full(64, _NONE, dtype=np.int64)
        self._links = 0                                # bumped whenever prev/next change
        self._two: tuple | None = None                 # the context smoothing's neighbourhood, by _links
        self._tail: dict[str, int] = {}                # episode -> its last live slot
        self._episodes: dict[str, str] = {"": ""}      # interned episode ids
        self._run: _Run | None = None                  # the current run of commits without one
        self.size = 0
        self.live_count = 0
        self.lexical = LexicalIndex(bm25)
        self.ivf: Ivf | None = None
        self.training = False

    # ------------------------------------------------------------------ writes

    def add(self, row: dict[str, Any], vector: np.ndarray, row_terms: list[str], agent: str = "",
            commit_ms: int = 0, episode: str = "", *, replacing: int | None = None) -> int:
        """Append a row; rows must arrive in commit order (that order defines context neighbours).
        `replacing`: the slot this row's previous version held (removed just before), whose place
        in its chain the new slot takes."""
        slot = self.size
        if slot == len(self.live):
            self._grow(2 * len(self.live))
        self.ids.append(row["id"])
        self.episode.append("")
        self.rows.append(row)
        self.size += 1
        self.place(slot, row, vector, row_terms, episode, stored=True)
        episode = self.episode[slot]
        old = replacing if replacing is not None and replacing < slot and self.episode[replacing] == episode else None
        if old is not None and self._splice_in(slot, old):
            return slot
        self._link_new(slot, agent, commit_ms, episode)
        return slot

    def reserve(self, rows: int) -> None:
        """Make an empty partition `rows` slots long, to be filled by :meth:`place` in any order
        and linked by :meth:`link_all` (the serving index's first load)."""
        assert self.size == 0
        self._grow(max(64, 1 << max(rows - 1, 0).bit_length()))
        self.ids = [""] * rows
        self.episode = [""] * rows
        self.rows.reserve(rows)
        self.size = rows

    def place(self, slot: int, row: dict[str, Any], vector: np.ndarray, row_terms: list[str], episode: str = "",
              *, stored: bool = False) -> None:
        """Fill a slot below `size` (unlinked)."""
        self.vectors.set(slot, vector)
        self.live[slot] = True
        if not stored:
            self.ids[slot] = row["id"]
            self.rows.put(slot, row)
        self.episode[slot] = self._episodes.setdefault(episode, episode)
        self.lexical.add(slot, row_terms)
        self.live_count += 1

    def link_all(self, agents: list[str], commit_ms: list[int]) -> None:
        """Link the placed slots as :meth:`add` would have, in slot (commit) order; the lexical index's
        postings all merged into its flat arrays (a query then reads one part a term)."""
        self.lexical.merge()
        for slot in range(self.size):
            if self.live[slot]:
                self._link_new(slot, agents[slot], commit_ms[slot], self.episode[slot])

    def _link_new(self, slot: int, agent: str, commit_ms: int, episode: str) -> None:
        if episode:
            before = self._tail.get(episode)
            if before is not None:
                self._link(before, slot)
            self._tail[episode] = slot
        else:
            self._follow(slot, agent, commit_ms)

    def _follow(self, slot: int, agent: str, commit_ms: int) -> None:
        """Extend the run with `slot`; link its window once the run is evidently coherent."""
        run = self._run
        if run is None or run.agent != agent or not 0 <= commit_ms - run.ms <= SESSION_GAP_MS:
            run = self._run = _Run(agent, commit_ms)
        run.ms = commit_ms
        run.slots.append(slot)
        run.count += 1
        at = run.count - 1                             # the slot's position in the run
        lags = [k for k in COHERENCE_LAGS if k <= at]
        if not lags:
            return
        here = self.vectors.row(slot)
        near = np.mean([np.dot(here, self.vectors.row(run.slots[-1 - k])) for k in COHERENCE_NEAR])
        far = np.mean([np.dot(here, self.vectors.row(run.slots[-1 - k])) for k in lags])
        run.excess.append(float(near - far))
        if len(run.excess) < COHERENCE_WINDOW or sum(run.excess) < COHERENCE * COHERENCE_WINDOW:
            return
        pairs = at if at < len(run.slots) else COHERENCE_WINDOW  # back to the run's start while it is held
        window = list(run.slots)[-(pairs + 1):]
        for before, after in zip(window, window[1:]):
            if (self.live[before] and self.live[after] and self.next[before] == _NONE
                    and self.prev[after] == _NONE):
                self._link(before, after)

    def remove(self, slot: int) -> None:
        """The slot goes dead; its two neighbours, if it had both, become each other's."""
        if not self.live[slot]:
            return
        self.live[slot] = False
        self.rows.remove(slot)
        self.lexical.remove(slot)
        self.live_count -= 1
        before, after = int(self.prev[slot]), int(self.next[slot])
        self._links += 1
        if before != _NONE:
            self.next[before] = _NONE
        if after != _NONE:
            self.prev[after] = _NONE
        # the dead slot keeps its own links (prev/next) so that a replacement can take its place
        episode = self.episode[slot]
        if before != _NONE and after != _NONE:
            self._link(before, after)
        if episode and self._tail.get(episode) == slot:
            if before != _NONE:
                self._tail[episode] = before
            else:
                del self._tail[episode]

    def _splice_in(self, slot: int, old: int) -> bool:
        """Put `slot` where the removed `old` was; False when `old` had no place to take."""
        before, after = int(self.prev[old]), int(self.next[old])
        episode = self.episode[slot]
        if episode and before == _NONE and after == _NONE and self._tail.get(episode) is not None:
            return False  # it had no neighbours of its episode left: append as a new one
        if not episode and before == _NONE and after == _NONE:
            return False  # not linked: it may still join its run
        if before != _NONE and after != _NONE and self.next[before] == after:
            self.next[before] = self.prev[after] = _NONE  # remove() had joined them around `old`
            self._links += 1
        if before != _NONE and self.live[before]:
            self._link(before, slot)
        if after != _NONE and self.live[after]:
            self._link(slot, after)
        if episode and (after == _NONE or not self.live[after]) and self._tail.get(episode) in (None, before):
            self._tail[episode] = slot
        return True

    def _link(self, before: int, after: int) -> None:
        self.next[before] = after
        self.prev[after] = before
        self._links += 1

    def _grow(self, cap: int) -> None:
        n = self.size
        self.vectors.grow(cap, n)  # the old arrays stay valid for a training snapshot
        live = np.zeros(cap, dtype=bool)
        live[:n] = self.live[:n]
        prev, nxt = np.full(cap, _NONE, dtype=np.int64), np.full(cap, _NONE, dtype=np.int64)
        prev[:n], nxt[:n] = self.prev[:n], self.next[:n]
        self.live = live
        self.prev, self.next = prev, nxt
        self._links += 1

    def compacted(self) -> tuple[Partition, dict[int, int]]:
        """A copy holding only the live slots (same links, same order); returns it and old -> new slots."""
        new = Partition(self.namespace, self.dim, self.lexical.params)
        olds = np.flatnonzero(self.live[: self.size])
        n = len(olds)
        new._grow(max(64, 1 << max(n - 1, 0).bit_length()))
        if n:
            new.vectors.codes[:n] = self.vectors.codes[olds]
            new.vectors.scales[:n] = self.vectors.scales[olds]
        new.live[:n] = True
        remap = np.full(self.size, _NONE, dtype=np.int64)
        remap[olds] = np.arange(n)
        for new_slot, s in enumerate(olds.tolist()):
            row = self.rows.get(s, self.ids[s])
            assert row is not None  # a live slot has its row (remove clears both)
            new.ids.append(self.ids[s])
            new.rows.append(row)
            new.episode.append(new._episodes.setdefault(self.episode[s], self.episode[s]))
        new.lexical = self.lexical.remapped(remap, n)
        new.size = new.live_count = n
        moved = dict(zip(olds.tolist(), range(n)))
        for s, t in moved.items():
            new.prev[t] = moved.get(int(self.prev[s]), _NONE)
            new.next[t] = moved.get(int(self.next[s]), _NONE)
        new._links += 1
        new._tail = {ep: moved[s] for ep, s in self._tail.items() if s in moved}
        return new, moved  # the current run starts afresh (its window would hold dead slots)

    # ------------------------------------------------------------------ reads

    def neighbours(self, slot: int) -> tuple[int, int]:
        """The slot's context neighbours (previous, next); -1 for none."""
        return int(self.prev[slot]), int(self.next[slot])

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
        # own[s] = slot s's own score (0 when removed); own[n] = own[-1] = 0 stands in for "none"
        own = np.zeros(n + 1, dtype=np.float32)
        prev, nxt = self.prev, self.next
        if np.count_nonzero(scores[:n]) * 16 > n:
            # many matches: one pass over every slot
            np.multiply(scores[:n], live, out=own[:n])
            linked, p, q, p2, q2 = self._neighbourhood(n)
            # a slot without neighbours scores its own score (0 + own, x live: own already is);
            # the others as below, the same float32 operations in the same order whichever the path
            smoothed = np.maximum(own[p], own[q])
            smoothed *= np.float32(context)
            two = np.maximum(own[p2], own[q2])
            two *= np.float32(0.5 * context)
            smoothed += two
            if linked is None:
                smoothed += own[:n]
                smoothed *= live
            else:
                smoothed += own[linked]
                smoothed *= live[linked]
                part, smoothed = smoothed, own[:n].copy()
                smoothed[linked] = part
            return top_hits(None, smoothed, k)
        hits = np.flatnonzero(scores[:n])
        hits = hits[live[hits]]
        if len(hits) == 0:
            return []
        own[hits] = scores[hits]
        p, q = prev[hits], nxt[hits]                  # few: just the matches and their neighbours
        near = np.concatenate([hits, p, q, np.where(p >= 0, prev[p], _NONE), np.where(q >= 0, nxt[q], _NONE)])
        cand = np.unique(near[near >= 0])
        cand = cand[live[cand]]
        p, q = prev[cand], nxt[cand]
        smoothed = (own[cand]
                    + context * np.maximum(own[p], own[q])
                    + (0.5 * context) * np.maximum(own[np.where(p >= 0, prev[p], _NONE)],
                                                   own[np.where(q >= 0, nxt[q], _NONE)]))
        keep = smoothed > 0.0
        return top_hits(cand[keep], smoothed[keep], k)

    def _neighbourhood(self, n: int) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(linked, prev, next, prev[prev], next[next]) for the context smoothing of the first `n`
        slots (-1 for none), kept until the links or the size change (the same for every query).
        Where at most half the slots have a neighbour, `linked` lists them and the four arrays are
        theirs only (the others score their own score); else `linked` is None and they cover all."""
        key = (self._links, n)
        cached = self._two
        if cached is None or cached[0] != key:
            p, q = self.prev[:n], self.next[:n]
            p2, q2 = np.where(p >= 0, self.prev[p], _NONE), np.where(q >= 0, self.next[q], _NONE)
            linked = np.flatnonzero((p >= 0) | (q >= 0))
            if 2 * len(linked) > n:
                cached = (key, None, p, q, p2, q2)
            else:
                cached = (key, linked, p[linked], q[linked], p2[linked], q2[linked])
            self._two = cached
        return cached[1], cached[2], cached[3], cached[4], cached[5]

    def wants_compaction(self) -> bool:
        dead = self.size - self.live_count
        return dead > COMPACT_MIN_DEAD and dead > self.live_count

    def dense(self, query: np.ndarray, k: int, ivf: IvfParams) -> list[tuple[int, float]]:
        index = self.ivf
        if index is not None and (index.reduced is not None or len(index.centroids) > 1):
            return index.search(self.vectors, self.size, query, k, self.live, ivf)
        # (a flat partitioning without principal axes scans everything anyway: exactly, contiguously)
        return exact_top(self.vectors, query, k, self.live, size=self.size)

    def dense_coarse(self, query: np.ndarray, k: int, ivf: IvfParams) -> tuple[np.ndarray, np.ndarray] | None:
        """The reduced scan's candidates and approximate cosines (`Ivf.coarse`), to be re-scored
        by the caller with `vectors.dot_slots`; None when this partition searches otherwise."""
        index = self.ivf
        return None if index is None else index.coarse(self.vectors, self.size, query, k, self.live, ivf)

    def wants_ivf(self, params: IvfParams) -> bool:
        """Partition from `flat_min_rows` live rows: flat (one list, the reduced scan) below
        `min_rows`, into ~sqrt(N) lists from it; again once the rows added since outgrow it."""
        if self.training or self.live_count < min(params.flat_min_rows, params.min_rows):
            return False
        if self.ivf is None:
            return True
        if len(self.ivf.centroids) == 1 and self.live_count >= params.min_rows:
            return True
        return self.ivf.stale(self.size, params)

    def train(self, params: IvfParams) -> Ivf:
        """Run in a worker thread over a snapshot (rows below `size` never change)."""
        size = self.size
        lists = 1 if self.live_count < params.min_rows else None
        return train_ivf(self.vectors.snapshot(), self.live[:size].copy(), params, size=size, lists=lists)
