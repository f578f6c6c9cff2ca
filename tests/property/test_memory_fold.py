"""Property: a CRDT memory state written as a row and read back is the same state, so folding
events row by row is folding them through the CRDT record."""

from __future__ import annotations

from hypothesis import given, settings

from projections.memories.fold import row_of, state_of
from tests.property.test_memory_state import _interleave, _run, choices, logs


@settings(max_examples=300, deadline=None)
@given(logs, choices)
def test_a_state_survives_the_row_round_trip(log, c) -> None:
    state = _run(_interleave(log, c))
    row = row_of(state, None, model="m", position="1-0")
    assert state_of(row) == state
    again = row_of(state_of(row), row, model="m", position="1-0")
    assert again == row
    assert row["version"] == state.version and row["is_deleted"] == (not state.alive)
    assert row["recall_count"] == state.count("recall") and row["volatile_flag"] == state.volatile
    useful, not_useful = state.votes_for("useful"), state.votes_for("not_useful")
    assert (row["useful_count"], row["not_useful_count"]) == (useful, not_useful)
    assert row["quality_score"] == (useful / (useful + not_useful) if useful + not_useful else 0.5)
