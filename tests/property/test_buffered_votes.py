"""Property: votes a LAN replica buffered during a partition and votes given to the primary directly
fold to the same registers whatever order they reach the log in — each agent's winning vote is the one
observed last (by the replica's stamp for a buffered vote, the primary's for a direct one) — so a
replica and its primary, folding the same log, show the same winner; a vote folded twice changes
nothing."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from events.catalogue import MemoryCommitted, MemoryFeedback
from events.envelope import Event
from events.hlc import HLC
from projections.memories.fold import op_of
from projections.memories.record import MemoryState, apply

AGENTS = ("alice", "bob", "carol")
HEAL_MS = 1_000_000          # the partition heals here: every buffered vote reaches the log after it

vote = st.tuples(st.sampled_from(AGENTS), st.sampled_from(("useful", "not_useful")),
                 st.integers(2, HEAL_MS - 1), st.booleans())            # agent, verdict, observed ms, buffered
# (observed from 2 ms: a direct vote is appended at its observed ms, and 1-0 is the commit's own position)
votes = st.lists(vote, min_size=1, max_size=12, unique_by=lambda v: v[2])


def _committed() -> Event:
    data = MemoryCommitted("m1", "the staging db is pg-3", "alice-main", "fact", "normal")
    return Event("memory.committed", data, ns="alice-main", agent="alice", position="1-0", hlc="1:0:primary",
                 origin="primary")


def _events(spec: list[tuple[str, str, int, bool]], arrival: list[int]) -> list[Event]:
    """The votes as the primary appends them: a direct vote when observed; a buffered one after the heal,
    in the order `arrival` draws, stamped by the replica when it observed it."""
    out = []
    for i, (agent, verdict, observed, buffered) in enumerate(spec):
        appended = HEAL_MS + arrival[i % len(arrival)] * 1000 + i if buffered else observed
        out.append(Event("memory.feedback", MemoryFeedback("m1", "alice-main", verdict, "",
                                                           str(HLC(observed, 0, "rep-1")) if buffered else ""),
                         ns="alice-main", agent=agent, position=f"{appended}-0", hlc=f"{appended}:0:primary",
                         origin="rep-1" if buffered else "primary"))
    return sorted(out, key=lambda e: int(e.position.split("-")[0]))


def _fold(events: list[Event]) -> MemoryState:
    state: MemoryState | None = None
    for event in [_committed(), *events]:
        op = op_of(event, state)
        assert op is not None
        state = apply(state or MemoryState("m1"), op)
    assert state is not None
    return state


def _winners(spec: list[tuple[str, str, int, bool]]) -> dict[str, str]:
    latest: dict[str, tuple[int, str]] = {}
    for agent, verdict, observed, _ in spec:
        if agent not in latest or observed > latest[agent][0]:
            latest[agent] = (observed, verdict)
    return {agent: verdict for agent, (_, verdict) in latest.items()}


@settings(max_examples=300, deadline=None)
@given(votes, st.lists(st.integers(0, 50), min_size=1, max_size=12),
       st.lists(st.integers(0, 50), min_size=1, max_size=12))
def test_the_vote_observed_last_wins_whatever_the_arrival(spec, arrival_a, arrival_b) -> None:
    a, b = _fold(_events(spec, arrival_a)), _fold(_events(spec, arrival_b))
    assert {voter: reg.value for voter, reg in a.votes.items()} == _winners(spec)
    assert a.votes == b.votes
    winners = list(_winners(spec).values())
    assert (a.votes_for("useful"), a.votes_for("not_useful")) == (winners.count("useful"),
                                                                   winners.count("not_useful"))


@settings(max_examples=100, deadline=None)
@given(votes, st.lists(st.integers(0, 50), min_size=1, max_size=12), st.integers(0, 11))
def test_a_vote_folded_twice_changes_nothing(spec, arrival, again) -> None:
    events = _events(spec, arrival)
    twice = [*events, events[again % len(events)]]
    assert _fold(twice).votes == _fold(events).votes
