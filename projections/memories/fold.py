"""Folding events into memory rows through the CRDT record (`projections.memories.record`).

An event becomes one :class:`~projections.memories.record.Op` (:func:`op_of`); a row is read back
into a :class:`~projections.memories.record.MemoryState` (:func:`state_of`), the op applied, and the
state written out as a row again (:func:`row_of`). The row keeps the seed 2.2 columns as they
were; the CRDT's bookkeeping (the stamp of every register, per-origin counters, each agent's
feedback vote, per-origin high-water positions, flag stamps, the stamp and kind of every history
entry) lives in the `crdt` JSON column, so a row read back gives exactly the state it was written
from.

Feedback: `useful_count` / `not_useful_count` count the agents whose latest vote is useful / not
useful (one vote per agent); quality_score = useful / (useful + not_useful), 0.5 without votes; a
quality below 0.3 with at least 5 votes halves the stored importance (seed 2.2, 3.2.1).

Everything comes from the events (stamps from their HLC and origin), never from the clock.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import orjson

from events import positions
from events.vocabulary import source_trust
from events.catalogue import (
    ConflictDetected, ConflictResolved, MemoryCommitted, MemoryCorrected, MemoryDeleted, MemoryDeprecated,
    MemoryDownweighted, MemoryFeedback, MemoryForgotten, MemoryMarkedStale, MemoryMerged, MemoryQualityDropped,
    MemoryQualityRecovered, MemoryUnmerged, MemoryValidated,
)
from events.envelope import Event
from events.hlc import HLC, iso_from_ms
from projections.memories.record import (
    Committed, Corrected, Counted, Deleted, FieldsSet, Forgotten, HistoryEntry, MemoryState, Op, Register,
    VERDICTS, Stamp, Voted, apply,
)
from projections.memories.scores import NEUTRAL_QUALITY, QUALITY_DROP_FACTOR, quality_low
from projections.text.lexical import index_text

__all__ = ["CRDT", "fold", "op_of", "row_of", "stamp_of", "state_of"]

CRDT = "crdt"
#: Registers a commit writes, with the row column each one fills.
COMMIT_FIELDS = ("content", "category", "decay_class", "kind", "namespace", "agent_id", "tier", "source", "tags",
                 "depends_on", "derived_from", "extractor", "timestamp")
#: Registers that have a row column (their values live there; `crdt` keeps only their stamps).
COLUMN_FIELDS = (*COMMIT_FIELDS, "freshness", "status")
IMPORTANCE_AT_COMMIT = 1.0
CONFIDENCE_CAP = 1.0


@lru_cache(maxsize=4096)
def _iso(ms: int) -> str:
    return iso_from_ms(ms)


def stamp_of(event: Event) -> Stamp:
    h = HLC.parse(event.hlc) if event.hlc else HLC(0, 0, "")
    return (h.wall_ms, h.counter, h.node, event.origin)


def observed_stamp(event: Event, observed_at: str) -> Stamp:
    """The stamp of a vote: the HLC at which a replica observed it (`observed_at`), else the event's."""
    if not observed_at:
        return stamp_of(event)
    h = HLC.parse(observed_at)
    return (h.wall_ms, h.counter, h.node, event.origin)


def op_of(event: Event, state: MemoryState | None, memory_id: str = "") -> Op | None:
    """The operation `event` applies to memory `memory_id` (default: the event's own memory; a merge
    or a conflict touches two). None: nothing to apply."""
    d = event.data
    stamp = stamp_of(event)
    if isinstance(d, (MemoryMerged, MemoryUnmerged, ConflictDetected, ConflictResolved)):
        if not memory_id:
            raise ValueError(f"{event.type} touches two memories: name the one to fold")
        return None if state is None else _pair_op(event, state, memory_id)
    ts = _iso(event.wall_ms)
    if isinstance(d, MemoryCommitted):
        entry = HistoryEntry(stamp, 1, d.content, updated_by=event.agent, source=d.source, trigger="none",
                             reason="initial", kind="commit")
        return Committed(stamp, event.position, fields={
            "content": d.content, "category": d.category, "decay_class": d.decay_class, "kind": d.kind,
            "namespace": d.namespace, "agent_id": event.agent, "tier": d.tier, "source": d.source,
            "tags": tuple(d.tags), "depends_on": tuple(d.depends_on), "derived_from": d.derived_from,
            "extractor": d.extractor, "timestamp": ts}, entry=entry)
    if state is None:
        return None  # an operation on a memory this projection never saw committed
    if isinstance(d, MemoryCorrected):
        entry = HistoryEntry(stamp, d.version, d.content, updated_by=event.agent,
                             source=d.source or state.get("source", ""), trigger=d.trigger or "none",
                             reason=d.reason, kind="correct")
        fields = {"freshness": "fresh", **({"source": d.source} if d.source else {})}  # new content: unverified
        return Corrected(stamp, event.position, content=d.content, fields=fields, entry=entry)
    if isinstance(d, MemoryDeprecated):
        entry = HistoryEntry(stamp, d.version, state.get("content", ""), updated_by=event.agent,
                             source=state.get("source", ""), trigger="none",
                             reason=f"deprecated: {d.reason}" if d.reason else "deprecated", kind="deprecate")
        return FieldsSet(stamp, event.position, fields={"status": "deprecated"}, entry=entry)
    if isinstance(d, MemoryFeedback):
        # the acting agent's vote register: its latest verdict replaces its earlier ones; a vote a LAN
        # replica buffered is ordered by when the replica observed it, not by when it reached the log
        if d.verdict not in VERDICTS:
            return None
        return Voted(observed_stamp(event, d.observed_at), event.position, voter=event.agent, verdict=d.verdict)
    if isinstance(d, MemoryValidated):  # confirmed again: verified, whatever its freshness was
        return Counted(stamp, event.position, counter="validated", amount=max(0, round(d.delta * 100)),
                       fields={"freshness": "verified"})
    if isinstance(d, MemoryMarkedStale):
        entry = HistoryEntry(stamp, d.version, state.get("content", ""), updated_by=event.agent,
                             source=state.get("source", ""), trigger=d.caused_by or "none",
                             reason=f"stale: {d.reason}", kind="stale")
        return FieldsSet(stamp, event.position, fields={"freshness": "stale"}, entry=entry)
    if isinstance(d, MemoryQualityDropped):
        return FieldsSet(stamp, event.position, fields={"quality_notice_ms": event.wall_ms})
    if isinstance(d, MemoryQualityRecovered):
        return FieldsSet(stamp, event.position, fields={"quality_notice_ms": 0})
    if isinstance(d, MemoryDownweighted):
        return FieldsSet(stamp, event.position, fields={"importance_factor": float(d.factor)})
    if isinstance(d, MemoryForgotten):
        entry = HistoryEntry(stamp, d.version, state.get("content", ""), updated_by=event.agent,
                             source=state.get("source", ""), trigger="forget_run", reason=f"forgotten: {d.reason}",
                             kind="forget")
        return Forgotten(stamp, event.position, entry=entry)
    if isinstance(d, MemoryDeleted):
        entry = HistoryEntry(stamp, d.version, state.get("content", ""), updated_by=event.agent,
                             source=state.get("source", ""), trigger="none",
                             reason=f"deleted: {d.reason}" if d.reason else "deleted", kind="delete")
        return Deleted(stamp, event.position, entry=entry)
    return None


def _pair_op(event: Event, state: MemoryState, memory_id: str) -> Op | None:
    """A merge, unmerge or conflict event's operation on one of its two memories."""
    d = event.data
    stamp = stamp_of(event)
    if isinstance(d, (ConflictDetected, ConflictResolved)):  # one LWW register per conflict: open or not
        return FieldsSet(stamp, event.position, fields={f"conflict:{d.conflict_id}": isinstance(d, ConflictDetected)})
    merged = isinstance(d, MemoryMerged)
    if memory_id == d.memory_id:   # the merged memory: its merged_into register
        entry = HistoryEntry(stamp, d.version, state.get("content", ""), updated_by=event.agent,
                             source=state.get("source", ""), trigger="merge" if merged else "unmerge",
                             reason=(f"merged into {d.merged_into}: {d.reason}" if merged
                                     else f"unmerged from {d.merged_into}"), kind="merge" if merged else "unmerge")
        return FieldsSet(stamp, event.position, fields={"merged_into": d.merged_into if merged else ""}, entry=entry)
    # the survivor keeps the merged memory's provenance (a grow-only history: an unmerge adds a line)
    entry = HistoryEntry(stamp, state.version, d.content if merged else state.get("content", ""),
                         updated_by=d.agent if merged else event.agent, source=d.source if merged else "",
                         trigger="merge" if merged else "unmerge",
                         reason=f"absorbed {d.memory_id}: {d.reason}" if merged else f"released {d.memory_id}",
                         kind="absorb" if merged else "release")
    return FieldsSet(stamp, event.position, fields={}, entry=entry)


def fold(row: dict[str, Any] | None, event: Event, model: str, memory_id: str = "") -> dict[str, Any] | None:
    """The row of memory `memory_id` (default: the event's own memory) after `event` (None when the
    event changes nothing: an unknown memory, a redelivery)."""
    mid = memory_id or event.data.memory_id
    state = state_of(row) if row is not None else None
    op = op_of(event, state, mid)
    if op is None:
        return None
    new = apply(state or MemoryState(mid), op)
    if new is state:
        return None
    return row_of(new, row, model=model, position=event.position)


# ---------------------------------------------------------------------------------- row <-> state

def _stamp(raw: list) -> Stamp:
    return (int(raw[0]), int(raw[1]), str(raw[2]), str(raw[3]))


def state_of(row: dict[str, Any]) -> MemoryState:
    meta = orjson.loads(row.get(CRDT) or "{}")
    stamps = meta.get("f", {})
    fields: dict[str, Register] = {}
    for name, raw in stamps.items():
        value = row.get(name)
        if name == "tags":
            value = tuple(value or ())
        elif name == "depends_on":
            value = tuple(orjson.loads(value) if isinstance(value, str) else value or ())
        fields[name] = Register(value, _stamp(raw))
    for name, raw in meta.get("x", {}).items():  # registers without a column of their own
        fields[name] = Register(raw[1], _stamp(raw[0]))
    history_json = orjson.loads(row["version_history"]) if isinstance(row.get("version_history"), str) \
        else row.get("version_history") or []
    kinds = meta.get("h", [])
    history = frozenset(
        HistoryEntry(_stamp(k[0]), int(h["version"]), h["content"], h.get("updated_by", ""), h.get("source", ""),
                     h.get("trigger", "none"), h.get("reason", ""), k[1])
        for h, k in zip(history_json, kinds))
    return MemoryState(
        memory_id=row["id"], fields=fields,
        counters={c: dict(v) for c, v in meta.get("c", {}).items()},
        votes={agent: Register(raw[1], _stamp(raw[0])) for agent, raw in meta.get("v", {}).items()},
        last_recalled_ms=int(meta.get("lr", 0)), history=history,
        deleted=_stamp(meta["d"]) if meta.get("d") else None,
        forgotten=_stamp(meta["g"]) if meta.get("g") else None,
        high_water=dict(meta.get("hw", {})))


def row_of(state: MemoryState, previous: dict[str, Any] | None, *, model: str, position: str) -> dict[str, Any]:
    """The row for `state`; the vector is kept when the content did not change, else None (to embed)."""
    content = state.get("content", "")
    kept = previous if previous is not None and previous.get("content") == content else None  # its vector stays
    useful, not_useful = state.votes_for("useful"), state.votes_for("not_useful")
    quality = useful / (useful + not_useful) if useful + not_useful else NEUTRAL_QUALITY
    dropped = quality_low(useful, not_useful, quality)
    history = state.ordered_history()
    versions = [e for e in history if e.kind in ("commit", "correct")]
    notice_ms = int(state.get("quality_notice_ms", 0) or 0)
    columns = {name: reg for name, reg in state.fields.items() if name in COLUMN_FIELDS}
    extra = {name: [list(reg.stamp), reg.value] for name, reg in state.fields.items() if name not in COLUMN_FIELDS}
    meta = {
        "f": {name: list(reg.stamp) for name, reg in sorted(columns.items())},
        "x": dict(sorted(extra.items())),
        "c": {c: dict(sorted(v.items())) for c, v in sorted(state.counters.items())},
        "v": {agent: [list(reg.stamp), reg.value] for agent, reg in sorted(state.votes.items())},
        "hw": dict(sorted(state.high_water.items())),
        "lr": state.last_recalled_ms,
        "d": list(state.deleted) if state.deleted else None,
        "g": list(state.forgotten) if state.forgotten else None,
        "h": [[list(e.stamp), e.kind] for e in history],
    }
    return {
        "id": state.memory_id,
        "content": content,
        "search_text": index_text(content),
        "vector": kept.get("vector") if kept is not None else None,
        "model": kept.get("model", model) if kept is not None else model,
        "category": state.get("category", ""),
        "decay_class": state.get("decay_class", ""),
        "kind": state.get("kind", ""),
        "namespace": state.get("namespace", ""),
        "agent_id": state.get("agent_id", ""),
        "tier": state.get("tier", "normal"),
        "importance": float(state.get("importance_factor", IMPORTANCE_AT_COMMIT))
        * (QUALITY_DROP_FACTOR if dropped else 1.0),
        "quality_score": quality,
        "freshness": state.get("freshness", "fresh"),
        "recall_count": state.count("recall"),
        "useful_count": useful,
        "not_useful_count": not_useful,
        "version": state.version,
        "version_history": orjson.dumps([
            {"version": e.version, "content": e.content, "updated_by": e.updated_by, "source": e.source,
             "trigger": e.trigger, "reason": e.reason, "timestamp": _iso(e.stamp[0])} for e in history]).decode(),
        "source": state.get("source", ""),
        "tags": list(state.get("tags", ())),
        "volatile_flag": state.volatile,
        "timestamp": state.get("timestamp", ""),
        "last_recalled_at": _iso(state.last_recalled_ms) if state.last_recalled_ms else "",
        "is_deleted": not state.alive or bool(state.get("merged_into")),
        "depends_on": orjson.dumps(list(state.get("depends_on", ()))).decode(),
        "derived_from": state.get("derived_from", ""),
        "extractor": state.get("extractor", "") or "",
        "status": "merged" if state.get("merged_into") else state.get("status", "active"),
        "merged_into": state.get("merged_into", "") or "",
        "conflicts": sorted(name[9:] for name, reg in state.fields.items()
                            if name.startswith("conflict:") and reg.value is True),
        "confidence": min(CONFIDENCE_CAP, source_trust(state.get("source", "")) + state.count("validated") / 100),
        "updated_at": _iso(versions[-1].stamp[0]) if versions else state.get("timestamp", ""),
        "quality_notice_at": _iso(notice_ms) if notice_ms else "",
        "position": positions.later(previous.get("position") if previous else None, position) or position,
        CRDT: orjson.dumps(meta).decode(),
    }
