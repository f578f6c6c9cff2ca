"""The memory record as a CRDT (DESIGN.md section 4).

A :class:`MemoryState` is built only by :func:`apply` (one operation, decided from one event)
and :func:`merge` (two states of the same memory, e.g. from two replicas):

* content and scalar fields: LWW registers ordered by :data:`Stamp` ``(wall_ms, counter, node,
  origin)`` — the event's HLC plus the origin that appended it, a total order;
* recall / validated: G-counters, one count per origin (merge: pointwise max);
* feedback: one LWW register per agent (its latest verdict, ordered by stamp like the other
  registers), so each agent's vote counts once however often it votes; the useful / not-useful
  counts are derived from the registers (:meth:`MemoryState.votes_for`);
* ``last_recalled_ms``: a max register;
* the version history: a grow-only set of :class:`HistoryEntry` (shown in stamp order);
* ``deleted`` / ``forgotten``: remove-wins flags (once set by any replica, set everywhere;
  the earliest stamp is kept so merges agree on it);
* ``high_water``: per origin, the position of the last operation applied — an operation at
  or before it is a redelivery and changes nothing. Each origin's operations must arrive in
  their log order (a stream guarantees it); origins may interleave arbitrarily.

``merge`` is commutative, associative and idempotent, and applying the union of two replicas'
operations gives the merge of their states (``tests/property/test_memory_state.py``). Nothing
here reads the clock or draws randomness: everything comes from the operations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from events import positions

__all__ = [
    "COUNTERS", "VERDICTS", "Counted", "Corrected", "Committed", "Deleted", "FieldsSet", "Forgotten", "HistoryEntry",
    "MemoryState", "Op", "Register", "Stamp", "Voted", "apply", "merge",
]

#: (HLC wall ms, HLC counter, HLC node, origin): the total order of LWW writes.
Stamp = tuple[int, int, str, str]
#: `validated` counts confidence gained from PassiveValidator matches, in hundredths (0.15 -> 15).
COUNTERS: Final = ("recall", "validated")
#: Feedback verdicts an agent's vote register holds.
VERDICTS: Final = ("useful", "not_useful")
#: Corrections after which a memory is volatile (seed 3.3: >= 3).
VOLATILE_AFTER: Final = 3


@dataclass(frozen=True, slots=True)
class Register:
    value: Any
    stamp: Stamp


@dataclass(frozen=True, slots=True, order=True)
class HistoryEntry:
    stamp: Stamp
    version: int
    content: str
    updated_by: str = ""
    source: str = ""
    trigger: str = "none"
    reason: str = ""
    kind: str = "commit"       # commit | correct | deprecate | stale | delete | forget


@dataclass(frozen=True, slots=True)
class MemoryState:
    memory_id: str
    fields: dict[str, Register] = field(default_factory=dict)
    counters: dict[str, dict[str, int]] = field(default_factory=dict)   # counter -> origin -> count
    votes: dict[str, Register] = field(default_factory=dict)          # agent -> its latest verdict (LWW)
    last_recalled_ms: int = 0
    history: frozenset[HistoryEntry] = frozenset()
    deleted: Stamp | None = None
    forgotten: Stamp | None = None
    high_water: dict[str, str] = field(default_factory=dict)          # origin -> last position applied

    # ---- reads

    def get(self, name: str, default: Any = None) -> Any:
        reg = self.fields.get(name)
        return default if reg is None else reg.value

    def count(self, counter: str) -> int:
        return sum(self.counters.get(counter, {}).values())

    def votes_for(self, verdict: str) -> int:
        """How many agents' latest feedback is `verdict` (each agent counts once)."""
        return sum(1 for reg in self.votes.values() if reg.value == verdict)

    @property
    def version(self) -> int:
        return max((e.version for e in self.history), default=0)

    @property
    def corrections(self) -> int:
        return sum(1 for e in self.history if e.kind == "correct")

    @property
    def volatile(self) -> bool:
        return self.corrections >= VOLATILE_AFTER

    @property
    def alive(self) -> bool:
        return self.deleted is None and self.forgotten is None

    def ordered_history(self) -> list[HistoryEntry]:
        return sorted(self.history)


# ---- operations (one per event; the projector decides them from events) -------------------------

@dataclass(frozen=True, slots=True)
class Op:
    stamp: Stamp
    position: str            # the event's position in its origin's log


@dataclass(frozen=True, slots=True)
class Committed(Op):
    fields: dict[str, Any] = field(default_factory=dict)   # content, namespace, category, tags...
    entry: HistoryEntry | None = None


@dataclass(frozen=True, slots=True)
class Corrected(Op):
    content: str = ""
    fields: dict[str, Any] = field(default_factory=dict)   # e.g. source
    entry: HistoryEntry | None = None


@dataclass(frozen=True, slots=True)
class FieldsSet(Op):
    """LWW writes of scalar fields (status, freshness, confidence, importance factor...)."""
    fields: dict[str, Any] = field(default_factory=dict)
    entry: HistoryEntry | None = None


@dataclass(frozen=True, slots=True)
class Counted(Op):
    counter: str = "recall"
    at_ms: int = 0          # for recall: when it was served (the event's time)
    amount: int = 1
    fields: dict[str, Any] = field(default_factory=dict)   # LWW writes that come with the count


@dataclass(frozen=True, slots=True)
class Voted(Op):
    """An agent's feedback: its vote register takes `verdict` unless it holds a later-stamped one."""
    voter: str = ""
    verdict: str = "useful"


@dataclass(frozen=True, slots=True)
class Deleted(Op):
    entry: HistoryEntry | None = None


@dataclass(frozen=True, slots=True)
class Forgotten(Op):
    entry: HistoryEntry | None = None


def _origin(op: Op) -> str:
    return op.stamp[3]


_SAME: Any = object()


def _evolve(s: MemoryState, *, fields: Any = _SAME, counters: Any = _SAME, votes: Any = _SAME,
            last_recalled_ms: Any = _SAME, history: Any = _SAME, deleted: Any = _SAME, forgotten: Any = _SAME,
            high_water: Any = _SAME) -> MemoryState:
    """`dataclasses.replace(s, ...)` spelt out (a quarter of its time: a replay applies one op an event)."""
    return MemoryState(memory_id=s.memory_id, fields=s.fields if fields is _SAME else fields,
                       counters=s.counters if counters is _SAME else counters,
                       votes=s.votes if votes is _SAME else votes,
                       last_recalled_ms=s.last_recalled_ms if last_recalled_ms is _SAME else last_recalled_ms,
                       history=s.history if history is _SAME else history,
                       deleted=s.deleted if deleted is _SAME else deleted,
                       forgotten=s.forgotten if forgotten is _SAME else forgotten,
                       high_water=s.high_water if high_water is _SAME else high_water)


def _lww(current: Register | None, value: Any, stamp: Stamp) -> Register:
    new = Register(value, stamp)
    return new if current is None else _merge_register(current, new)


def _merge_register(a: Register, b: Register) -> Register:
    if a.stamp != b.stamp:
        return a if a.stamp > b.stamp else b
    # One stamp is one event, hence one value; should two ever differ, pick one deterministically.
    return a if repr(a.value) >= repr(b.value) else b


def _earliest(a: Stamp | None, b: Stamp | None) -> Stamp | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def apply(state: MemoryState, op: Op) -> MemoryState:
    """`state` after `op`; unchanged when `op` is at or before its origin's high-water position."""
    origin = _origin(op)
    if positions.key(op.position) <= positions.key(state.high_water.get(origin)):
        return state
    high_water = {**state.high_water, origin: op.position}
    if isinstance(op, (Committed, Corrected, FieldsSet)):
        writes = dict(op.fields)
        if isinstance(op, Corrected):
            writes["content"] = op.content
        fields = dict(state.fields)
        for name, value in writes.items():
            fields[name] = _lww(fields.get(name), value, op.stamp)
        entry = op.entry
        history = state.history | {entry} if entry is not None else state.history
        return _evolve(state, fields=fields, history=history, high_water=high_water)
    if isinstance(op, Counted):
        if op.counter not in COUNTERS:
            raise ValueError(f"unknown counter {op.counter!r}")
        if op.amount < 0:
            raise ValueError("a G-counter only grows")
        per_origin = dict(state.counters.get(op.counter, {}))
        per_origin[origin] = per_origin.get(origin, 0) + op.amount
        fields = state.fields
        if op.fields:
            fields = dict(state.fields)
            for name, value in op.fields.items():
                fields[name] = _lww(fields.get(name), value, op.stamp)
        return _evolve(state, fields=fields, counters={**state.counters, op.counter: per_origin},
                       last_recalled_ms=max(state.last_recalled_ms, op.at_ms) if op.counter == "recall"
                       else state.last_recalled_ms,
                       high_water=high_water)
    if isinstance(op, Voted):
        if op.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {op.verdict!r}")
        votes = {**state.votes, op.voter: _lww(state.votes.get(op.voter), op.verdict, op.stamp)}
        return _evolve(state, votes=votes, high_water=high_water)
    if isinstance(op, (Deleted, Forgotten)):
        entry = op.entry
        history = state.history | {entry} if entry is not None else state.history
        if isinstance(op, Deleted):
            return _evolve(state, deleted=_earliest(state.deleted, op.stamp), history=history, high_water=high_water)
        return _evolve(state, forgotten=_earliest(state.forgotten, op.stamp), history=history, high_water=high_water)
    raise TypeError(f"not a memory operation: {op!r}")


def merge(a: MemoryState, b: MemoryState) -> MemoryState:
    """The least upper bound of two states of one memory."""
    if a.memory_id != b.memory_id:
        raise ValueError(f"cannot merge states of different memories: {a.memory_id} / {b.memory_id}")
    fields = dict(a.fields)
    for name, reg in b.fields.items():
        fields[name] = reg if name not in fields else _merge_register(fields[name], reg)
    votes = dict(a.votes)
    for voter, reg in b.votes.items():
        votes[voter] = reg if voter not in votes else _merge_register(votes[voter], reg)
    counters: dict[str, dict[str, int]] = {}
    for name in {*a.counters, *b.counters}:
        ca, cb = a.counters.get(name, {}), b.counters.get(name, {})
        counters[name] = {o: max(ca.get(o, 0), cb.get(o, 0)) for o in {*ca, *cb}}
    high_water = {o: positions.later(a.high_water.get(o), b.high_water.get(o)) or ""
                  for o in {*a.high_water, *b.high_water}}
    return MemoryState(
        memory_id=a.memory_id,
        fields=fields,
        counters=counters,
        votes=votes,
        last_recalled_ms=max(a.last_recalled_ms, b.last_recalled_ms),
        history=a.history | b.history,
        deleted=_earliest(a.deleted, b.deleted),
        forgotten=_earliest(a.forgotten, b.forgotten),
        high_water=high_water,
    )
