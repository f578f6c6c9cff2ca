"""Property: the CRDT memory record's merge is commutative, associative and idempotent; redelivered
operations change nothing; replicas applying the same operations in any interleaving (each origin's
in order) converge; and merging two replicas equals applying the union of what they applied."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.memories.record import (
    Committed, Corrected, Counted, Deleted, FieldsSet, Forgotten, HistoryEntry, MemoryState, Voted, apply, merge,
)

ORIGINS = ["origin-a", "origin-b", "origin-c"]
VOTERS = ["alice", "bob"]   # few voters: the same agent votes again, from one origin or several
TEXTS = ["nginx listens on 8080", "nginx listens on 8443", "用户偏好：结论先行", ""]

op_spec = st.tuples(
    st.sampled_from(["commit", "correct", "fields", "recall", "useful", "not_useful", "delete", "forget", "validated",
                     "notice", "factor", "stale"]),
    st.integers(0, 5),               # wall ms (small: concurrent writes of different origins collide)
    st.sampled_from(TEXTS),
    st.sampled_from(["fresh", "stale"]),
    st.floats(0.0, 1.0, allow_nan=False),
    st.sampled_from(VOTERS),
)


def _op(spec: tuple, origin: str, i: int):
    kind, wall, text, freshness, confidence, voter = spec
    stamp = (wall, i, "node-" + origin[-1], origin)
    position = f"{1000 + i}-0"
    entry = HistoryEntry(stamp=stamp, version=i + 1, content=text, updated_by=origin, kind={
        "commit": "commit", "correct": "correct", "delete": "delete", "forget": "forget",
        "stale": "stale"}.get(kind, "commit"))
    if kind == "commit":
        return Committed(stamp, position, fields={"content": text, "namespace": "shared", "tags": ("a",)}, entry=entry)
    if kind == "correct":
        return Corrected(stamp, position, content=text, fields={"source": "user_said"}, entry=entry)
    if kind == "fields":
        return FieldsSet(stamp, position, fields={"freshness": freshness, "confidence": confidence})
    if kind == "validated":   # a count and an LWW write in one operation
        return Counted(stamp, position, counter="validated", amount=1 + i % 20, fields={"freshness": "verified"})
    if kind == "notice":
        return FieldsSet(stamp, position, fields={"quality_notice_ms": wall * 1000 if i % 2 else 0})
    if kind == "factor":
        return FieldsSet(stamp, position, fields={"importance_factor": round(confidence, 3)})
    if kind == "stale":
        return FieldsSet(stamp, position, fields={"freshness": "stale"}, entry=entry)
    if kind == "recall":
        return Counted(stamp, position, counter=kind, at_ms=wall * 1000)
    if kind in ("useful", "not_useful"):
        return Voted(stamp, position, voter=voter, verdict=kind)
    if kind == "delete":
        return Deleted(stamp, position, entry=entry)
    return Forgotten(stamp, position, entry=entry)


logs = st.fixed_dictionaries({o: st.lists(op_spec, max_size=8) for o in ORIGINS}).map(
    lambda specs: {o: [_op(s, o, i) for i, s in enumerate(ss)] for o, ss in specs.items()})


def _interleave(log: dict[str, list], choices: list[int], prefix: dict[str, int] | None = None) -> list:
    """The ops of every origin (up to `prefix`), interleaved by `choices`, each origin in order."""
    queues = {o: list(ops[: (prefix or {}).get(o, len(ops))]) for o, ops in log.items()}
    out, i = [], 0
    while any(queues.values()):
        live = [o for o in ORIGINS if queues[o]]
        o = live[choices[i % len(choices)] % len(live)] if choices else live[0]
        out.append(queues[o].pop(0))
        i += 1
    return out


def _run(ops: list, state: MemoryState | None = None) -> MemoryState:
    state = state or MemoryState("m1")
    for op in ops:
        state = apply(state, op)
    return state


choices = st.lists(st.integers(0, 5), min_size=1, max_size=30)
prefixes = st.fixed_dictionaries({o: st.integers(0, 8) for o in ORIGINS})


@settings(max_examples=300, deadline=None)
@given(logs, choices, choices, prefixes, prefixes, prefixes)
def test_merge_is_commutative_associative_and_idempotent(log, c1, c2, p1, p2, p3) -> None:
    a, b, c = _run(_interleave(log, c1, p1)), _run(_interleave(log, c2, p2)), _run(_interleave(log, c1, p3))
    assert merge(a, b) == merge(b, a)
    assert merge(merge(a, b), c) == merge(a, merge(b, c))
    assert merge(a, a) == a


@settings(max_examples=300, deadline=None)
@given(logs, choices, st.lists(st.integers(0, 100), max_size=10))
def test_redelivered_operations_change_nothing(log, c, again) -> None:
    ops = _interleave(log, c)
    state = _run(ops)
    if ops:
        redelivered = [ops[i % len(ops)] for i in again]
        assert _run(redelivered, state) == state


@settings(max_examples=300, deadline=None)
@given(logs, choices, choices)
def test_replicas_converge_whatever_the_interleaving(log, c1, c2) -> None:
    assert _run(_interleave(log, c1)) == _run(_interleave(log, c2))


@settings(max_examples=300, deadline=None)
@given(logs, choices, choices, prefixes, prefixes)
def test_merging_two_replicas_equals_applying_what_both_saw(log, c1, c2, p1, p2) -> None:
    a, b = _run(_interleave(log, c1, p1)), _run(_interleave(log, c2, p2))
    union = {o: max(p1[o], p2[o]) for o in ORIGINS}
    assert merge(a, b) == _run(_interleave(log, c1, union))


def test_reads_of_a_record() -> None:
    s = MemoryState("m1")
    s = apply(s, Committed((1, 0, "n", "o"), "1-0", fields={"content": "v1"},
                           entry=HistoryEntry((1, 0, "n", "o"), 1, "v1")))
    for i in range(3):
        stamp = (2 + i, 0, "n", "o")
        s = apply(s, Corrected(stamp, f"{2 + i}-0", content=f"v{i + 2}",
                               entry=HistoryEntry(stamp, i + 2, f"v{i + 2}", kind="correct", reason="fix")))
    s = apply(s, Counted((9, 0, "n", "o"), "9-0", counter="recall", at_ms=9000))
    s = apply(s, Voted((10, 0, "n", "o"), "10-0", voter="bob", verdict="useful"))
    assert s.get("content") == "v4" and s.version == 4 and s.corrections == 3 and s.volatile
    assert s.count("recall") == 1 and s.votes_for("useful") == 1 and s.last_recalled_ms == 9000
    assert [e.content for e in s.ordered_history()] == ["v1", "v2", "v3", "v4"]
    assert s.alive
    s = apply(s, Deleted((11, 0, "n", "o"), "11-0"))
    assert not s.alive and s.get("content") == "v4"
    # a write stamped earlier than the current value loses, whenever it arrives
    late = apply(s, FieldsSet((0, 5, "n", "other"), "1-0", fields={"content": "old"}))
    assert late.get("content") == "v4"


def _votes(s: MemoryState) -> tuple[int, int]:
    return s.votes_for("useful"), s.votes_for("not_useful")


def test_an_agents_repeated_votes_count_once() -> None:
    s = MemoryState("m1")
    for i in range(6):
        s = apply(s, Voted((10 + i, 0, "n", "o"), f"{10 + i}-0", voter="mallory", verdict="not_useful"))
    assert _votes(s) == (0, 1)


def test_an_agent_changing_its_vote_keeps_only_the_latest() -> None:
    s = apply(MemoryState("m1"), Voted((10, 0, "n", "o"), "10-0", voter="bob", verdict="useful"))
    s = apply(s, Voted((11, 0, "n", "o"), "11-0", voter="bob", verdict="not_useful"))
    assert _votes(s) == (0, 1)
    # from another origin, a vote stamped earlier than the latest loses, whenever it arrives
    s = apply(s, Voted((9, 0, "n", "p"), "5-0", voter="bob", verdict="useful"))
    assert _votes(s) == (0, 1)
    s = apply(s, Voted((12, 0, "n", "p"), "6-0", voter="bob", verdict="useful"))
    assert _votes(s) == (1, 0)


def test_several_agents_votes_count_once_each() -> None:
    s = MemoryState("m1")
    for i, (voter, verdict) in enumerate([("a", "useful"), ("b", "useful"), ("a", "useful"), ("c", "not_useful"),
                                          ("b", "useful"), ("c", "not_useful")]):
        s = apply(s, Voted((10 + i, 0, "n", "o"), f"{10 + i}-0", voter=voter, verdict=verdict))
    assert _votes(s) == (2, 1)


@settings(max_examples=300, deadline=None)
@given(logs, choices)
def test_each_agent_counts_once_with_its_latest_vote(log, c) -> None:
    """Whatever the interleaving, an agent's vote is the verdict of its highest-stamped vote."""
    state = _run(_interleave(log, c))
    latest: dict[str, tuple] = {}
    for op in (op for ops in log.values() for op in ops if isinstance(op, Voted)):
        if op.voter not in latest or op.stamp > latest[op.voter].stamp:
            latest[op.voter] = op
    want = [v.verdict for v in latest.values()]
    assert _votes(state) == (want.count("useful"), want.count("not_useful"))
    assert sum(_votes(state)) <= len(VOTERS)


def test_an_unknown_verdict_is_refused() -> None:
    with pytest.raises(ValueError):
        apply(MemoryState("m1"), Voted((1, 0, "n", "o"), "1-0", voter="a", verdict="meh"))
    with pytest.raises(ValueError):   # feedback is no longer a counter
        apply(MemoryState("m1"), Counted((1, 0, "n", "o"), "1-0", counter="useful"))
