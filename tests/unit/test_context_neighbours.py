"""Context-neighbour smoothing of the serving index's lexical scores."""

from __future__ import annotations

import numpy as np

from projections.serving.bm25 import BM25Params
from projections.serving.partition import SESSION_GAP_MS, Partition
from projections.text.lexical import index_text, query_text, terms

MIN = 60_000


def _partition(turns: list[tuple[str, str, int]]) -> Partition:
    part = Partition("ns", 4, BM25Params())
    for i, (agent, text, ms) in enumerate(turns):
        part.add({"id": f"m{i}", "content": text}, np.ones(4, dtype=np.float32) / 2, terms(index_text(text)), agent, ms)
    return part


def _ids(part: Partition, query: str, context: float) -> list[str]:
    return [part.ids[s] for s, _ in part.lexical_search(terms(query_text(query)), 10, context)]


def test_the_turn_after_a_match_is_found_through_its_context() -> None:
    part = _partition([("a", "Melanie: what do you do to relax after work?", 0),
                       ("a", "Caroline: pottery, mostly bowls and mugs", 1),
                       ("a", "Melanie: the weather was lovely today", 2),
                       ("a", "Caroline: we went hiking near the lake", 3)])
    query = "what does Caroline do to relax after work"
    assert "m1" in _ids(part, query, 0.6)[:2]
    without = _ids(part, query, 0.0)
    assert without[0] == "m0" and without.index("m1") > without.index("m0")
    scores = dict(part.lexical_search(terms(query_text("relax")), 10, 0.6))
    own = dict(part.lexical_search(terms(query_text("relax")), 10, 0.0))
    assert scores[1] == np.float32(0.6 * own[0])  # only through its neighbour
    assert scores[2] == np.float32(0.3 * own[0])  # two turns out: half the weight
    assert 3 not in scores


def test_neighbours_stop_at_another_agent_a_session_gap_and_deleted_rows() -> None:
    part = _partition([("a", "alpha beta", 0),
                       ("b", "unrelated words", MIN),                       # another agent
                       ("b", "more unrelated words", 2 * MIN),
                       ("b", "gamma delta", 3 * MIN),
                       ("b", "far later words", 3 * MIN + SESSION_GAP_MS + 1)])  # a new session
    assert set(_ids(part, "alpha", 0.6)) == {"m0"}
    assert set(_ids(part, "gamma", 0.6)) == {"m3", "m2", "m1"}
    part.remove(3)
    assert _ids(part, "gamma", 0.6) == []  # a removed memory neither matches nor lends context
