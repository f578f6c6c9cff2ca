"""An in-memory BM25 index over one namespace's memories (the serving index's lexical half).

Documents are lists of analysed terms (:func:`projections.text.lexical.terms`), identified by the
integer slots the owner assigns. Scoring is Lucene's BM25::

    idf(t)   = ln(1 + (N - df + 0.5) / (df + 0.5))
    score(d) = sum over query terms t of  idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))

with N, df and avgdl over the live documents of this index only, so one namespace's scores
never depend on what other agents stored. A query term repeated counts that many times.

Postings are flat arrays (`LexicalIndex`): removing a document drops it from the statistics and
from the postings when the owner rebuilds the index. The owner passes the mask of live slots to
:meth:`LexicalIndex.search`, so a removed document never comes back.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from dataclasses import dataclass, field
import numpy as np

from projections.serving.accumulate import accumulate
from projections.serving.topk import top_hits

__all__ = ["BM25Params", "LexicalIndex"]

@dataclass(frozen=True, slots=True)
class BM25Params:
    """Tuned on LoCoMo conv-26/30 (short memories: a low k1 saturates term frequency early, a low
    b penalises length less): k1 0.5, b 0.5 beat Lucene's 1.2 / 0.75 by ~2 points of recall@5."""

    k1: float = 0.5
    b: float = 0.5

    def __post_init__(self) -> None:
        if self.k1 < 0 or not 0.0 <= self.b <= 1.0:
            raise ValueError("BM25 needs k1 >= 0 and 0 <= b <= 1")


#: The postings added since the last merge are merged into the flat arrays once they are this many
#: and an eighth of those (a bulk load merges O(log n) times; at 100k memories in a namespace a live
#: ingest merges once every ~1.2k commits into it, on the thread applying the delta: inserted into
#: the flat arrays, not sorted with them: 27 -> 10 ms at 540k postings, 386 -> 101 ms at 5M).
MERGE_MIN = 4096
#: Cached impacts are dropped once they hold more floats than this share of the postings. Queries of
#: common words read most postings: at 100k memories the bench's queries cached 98% of them (213 B a
#: memory), and a quarter made every query recompute its impacts (all-scope BM25 1.5 -> 6.5 ms).
IMPACT_CACHE_SHARE = 1.0

_INDEXED, _REMOVED = 1, 2


@dataclass(slots=True)
class _Postings:
    """Postings grouped by term id: term `t`'s are `slots[offsets[t]:offsets[t + 1]]` (int32) with
    their term frequencies `tfs` (uint16, capped); term ids past `len(offsets) - 1` have none."""

    offsets: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    slots: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    tfs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint16))

    @property
    def nbytes(self) -> int:
        return self.offsets.nbytes + self.slots.nbytes + self.tfs.nbytes

    def tids(self) -> np.ndarray:
        """The term id of each posting."""
        return np.repeat(np.arange(len(self.offsets) - 1, dtype=np.int32), np.diff(self.offsets))

    def range(self, tid: int) -> tuple[int, int]:
        if tid + 1 >= len(self.offsets):
            return 0, 0
        return int(self.offsets[tid]), int(self.offsets[tid + 1])

    @staticmethod
    def grouped(tids: np.ndarray, slots: np.ndarray, tfs: np.ndarray, terms: int) -> _Postings:
        """Postings in any order, grouped by term id (a stable sort: each term's keep their order)."""
        order = np.argsort(tids, kind="stable")
        offsets = np.zeros(terms + 1, dtype=np.int64)
        np.cumsum(np.bincount(tids, minlength=terms), out=offsets[1:])
        return _Postings(offsets, slots[order], tfs[order])

    def merged(self, tids: np.ndarray, slots: np.ndarray, tfs: np.ndarray, terms: int) -> _Postings:
        """These postings with more (any order) added after each term's own: what `grouped` gives for
        the two concatenated, by one pass of insertions instead of a sort of every posting."""
        order = np.argsort(tids, kind="stable")   # only the added ones: each term's keep their order
        tids, slots, tfs = tids[order], slots[order], tfs[order]
        ends = self.offsets[np.minimum(tids.astype(np.int64) + 1, len(self.offsets) - 1)]
        offsets = np.zeros(terms + 1, dtype=np.int64)
        offsets[:len(self.offsets)] = self.offsets
        offsets[len(self.offsets):] = self.offsets[-1]
        offsets[1:] += np.cumsum(np.bincount(tids, minlength=terms))
        return _Postings(offsets, np.insert(self.slots, ends, slots), np.insert(self.tfs, ends, tfs))


class LexicalIndex:
    """BM25 over documents added by slot. Postings live in flat arrays grouped by term (`_Postings`:
    6 bytes a posting), plus those added since the last merge in a small array pair per term (an
    append and a lookup stay O(1); merged once they are an eighth of the rest). Besides the term
    dictionary no per-term or per-document Python objects last: at 100k memories the per-term arrays,
    their tuples and each document's term ids cost ~600 bytes a memory more, and fragmented the heap.
    A removal is settled lazily: the next read finds the removed slots' postings in one vectorised
    pass and lowers their terms' document frequencies."""

    def __init__(self, params: BM25Params = BM25Params()) -> None:
        self.params = params
        self._tid: dict[str, int] = {}                          # term -> term id
        self._df = np.zeros(64, dtype=np.int32)                  # term id -> live documents holding it
        self._main = _Postings()
        self._new: dict[int, tuple[array, array]] = {}         # term id -> (slots 'i', tfs 'H') since the merge
        self._new_count = 0
        self._state = bytearray()                                # by slot: 0, _INDEXED or _REMOVED
        self._doc_len = array("f")                               # by slot; 0 once removed
        self._removed: list[int] = []                            # removals whose terms' df is not lowered yet
        self._count = 0
        self._total_len = 0
        # term id -> (the generation it was computed at, each main posting's BM25 part
        # tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))): reused until the index changes
        self._impacts: dict[int, tuple[int, np.ndarray]] = {}
        self._cached = 0                                         # floats held in _impacts
        self._generation = 0                                     # bumped by every add and remove

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        """Bytes held in arrays (postings, per-document arrays, cached impacts)."""
        new = 6 * self._new_count
        return (self._main.nbytes + new + self._df.nbytes + len(self._state) + 4 * len(self._doc_len)
                + 4 * self._cached)

    @property
    def postings(self) -> int:
        return len(self._main.slots) + self._new_count

    def add(self, slot: int, terms: list[str]) -> None:
        if slot < len(self._state) and self._state[slot]:
            raise ValueError(f"slot {slot} is already indexed" if self._state[slot] == _INDEXED
                             else f"slot {slot} was removed: slots are not reused")
        more = slot + 1 - len(self._state)
        if more > 0:
            self._state.extend(bytes(more))
            self._doc_len.extend([0.0] * more)
        counts = Counter(terms)
        tid_of, new = self._tid, self._new
        for term, tf in counts.items():
            tid = tid_of.get(term)
            if tid is None:
                tid = tid_of[term] = len(tid_of)
                if tid == len(self._df):
                    self._df = np.concatenate([self._df, np.zeros(len(self._df), dtype=np.int32)])
            held = new.get(tid)
            if held is None:
                held = new[tid] = (array("i"), array("H"))
            held[0].append(slot)
            held[1].append(min(tf, 0xFFFF))
            self._df[tid] += 1
        self._new_count += len(counts)
        self._state[slot] = _INDEXED
        self._doc_len[slot] = float(len(terms))
        self._count += 1
        self._total_len += len(terms)
        self._generation += 1
        if self._new_count >= max(MERGE_MIN, len(self._main.slots) >> 3):
            self._merge()

    def remove(self, slot: int) -> None:
        if slot >= len(self._state) or self._state[slot] != _INDEXED:
            return
        self._state[slot] = _REMOVED
        self._removed.append(slot)
        self._count -= 1
        self._total_len -= int(self._doc_len[slot])
        self._generation += 1
        self._doc_len[slot] = 0.0

    def df(self, term: str) -> int:
        tid = self._tid.get(term)
        if tid is None:
            return 0
        self._settle()
        return int(self._df[tid])

    def _new_flat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The new postings as three flat arrays (term ids, slots, tfs)."""
        if not self._new:
            return np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.uint16)
        tids = np.fromiter(self._new, dtype=np.int32, count=len(self._new))
        lengths = np.fromiter((len(s) for s, _ in self._new.values()), dtype=np.int64, count=len(self._new))
        slots = np.frombuffer(b"".join(s.tobytes() for s, _ in self._new.values()), dtype=np.int32)
        tfs = np.frombuffer(b"".join(t.tobytes() for _, t in self._new.values()), dtype=np.uint16)
        return np.repeat(tids, lengths), slots, tfs

    def _all(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every posting (term ids, slots, tfs): the main ones, then the new ones."""
        tids, slots, tfs = self._new_flat()
        return (np.concatenate([self._main.tids(), tids]), np.concatenate([self._main.slots, slots]),
                np.concatenate([self._main.tfs, tfs]))

    def merge(self) -> None:
        """Merge the postings added since the last merge into the flat arrays (done as they grow)."""
        if self._new:
            self._merge()

    def _merge(self) -> None:
        self._main = self._main.merged(*self._new_flat(), len(self._tid))
        self._new, self._new_count = {}, 0
        self._impacts.clear()   # cached by term over the old main arrays
        self._cached = 0

    def _settle(self) -> None:
        """Lower the document frequencies of the removed documents' terms (their postings stay, dead,
        until `remapped`)."""
        if not self._removed:
            return
        gone = np.zeros(len(self._state), dtype=bool)
        gone[self._removed] = True
        self._removed = []
        new_tids, new_slots, _ = self._new_flat()
        for tids, slots in ((None, self._main.slots), (new_tids, new_slots)):
            hit = np.flatnonzero(gone[slots])
            if len(hit):
                held = self._main.tids()[hit] if tids is None else tids[hit]
                self._df[:len(self._tid)] -= np.bincount(held, minlength=len(self._tid)).astype(np.int32)

    def remapped(self, moved: np.ndarray, size: int) -> "LexicalIndex":
        """A copy over new slots: `moved[old]` is an indexed slot's new slot (-1: dropped); the new
        slots (below `size`) keep their documents' term frequencies and lengths."""
        self._settle()
        new = LexicalIndex(self.params)
        new._tid = dict(self._tid)
        new._state = bytearray(size)
        new._doc_len = array("f", bytes(4 * size))
        state = np.frombuffer(self._state, dtype=np.uint8)
        olds = np.flatnonzero(state == _INDEXED)
        olds = olds[(olds < len(moved))]
        olds = olds[moved[olds] >= 0]
        to = moved[olds]
        np.frombuffer(new._state, dtype=np.uint8)[to] = _INDEXED
        lengths = np.frombuffer(self._doc_len, dtype=np.float32)[olds]
        np.frombuffer(new._doc_len, dtype=np.float32)[to] = lengths
        new._count = len(olds)
        new._total_len = int(lengths.astype(np.int64).sum())
        tids, slots, tfs = self._all()
        slot_to = np.full(len(self._state), -1, dtype=np.int64)
        slot_to[olds] = to
        keep = np.flatnonzero(slot_to[slots] >= 0)
        terms = len(self._tid)
        new._main = _Postings.grouped(tids[keep], slot_to[slots[keep]].astype(np.int32), tfs[keep], terms)
        new._df = np.bincount(tids[keep], minlength=max(terms, 1)).astype(np.int32)
        return new

    def scores(self, terms: list[str]) -> np.ndarray | None:
        """BM25 of every slot (0 where no term matches; removed slots may hold stale values: mask
        them), or None when no query term is indexed."""
        n = self._count
        if n == 0 or not terms:
            return None
        self._settle()
        k1, b = self.params.k1, self.params.b
        avgdl = self._total_len / n if self._total_len > 0 else 1.0
        doc_len = np.frombuffer(self._doc_len, dtype=np.float32)
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        weights: list[float] = []
        generation, tid_of, dfs, main, impacts = self._generation, self._tid, self._df, self._main, self._impacts
        new = self._new

        def impact_of(slots: np.ndarray, tfs16: np.ndarray) -> np.ndarray:
            tfs = tfs16.astype(np.float32)
            norm = k1 * (1.0 - b + b * doc_len[slots] / avgdl)
            return tfs * (k1 + 1.0) / (tfs + norm)

        for term, qtf in Counter(terms).items():
            tid = tid_of.get(term)
            if tid is None:
                continue
            df = int(dfs[tid])
            if df <= 0:
                continue
            weight = qtf * math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            lo, hi = main.range(tid)
            if hi > lo:
                slots = main.slots[lo:hi]
                cached = impacts.get(tid)
                if cached is not None and cached[0] == generation:
                    impact = cached[1]
                else:
                    impact = impact_of(slots, main.tfs[lo:hi])
                    self._cache(tid, generation, impact, cached)
                parts.append((slots, impact))
                weights.append(weight)
            held = new.get(tid)
            if held is not None:
                slots = np.frombuffer(held[0], dtype=np.int32)
                parts.append((slots, impact_of(slots, np.frombuffer(held[1], dtype=np.uint16))))
                weights.append(weight)
        if not parts:
            return None
        return accumulate(len(doc_len), parts, np.array(weights, dtype=np.float32))

    def _cache(self, tid: int, generation: int, impact: np.ndarray, stale: tuple[int, np.ndarray] | None) -> None:
        if stale is not None:
            self._cached -= len(stale[1])
        if self._cached + len(impact) > IMPACT_CACHE_SHARE * max(len(self._main.slots), 1):
            self._impacts.clear()
            self._cached = 0
        self._impacts[tid] = (generation, impact)
        self._cached += len(impact)

    def search(self, terms: list[str], k: int, live: np.ndarray) -> list[tuple[int, float]]:
        """The `k` best (slot, score) among slots where `live` is true, best first (ties by slot)."""
        scores = self.scores(terms)
        if scores is None or k <= 0:
            return []
        m = min(len(scores), len(live))
        scores[:m][~live[:m]] = 0.0
        scores[m:] = 0.0
        return top_hits(None, scores, k)
