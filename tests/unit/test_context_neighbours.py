"""Context-neighbour smoothing of the serving index's lexical scores, and which memories are
neighbours: the memories of the same episode (`derived_from`) in commit order; without an episode,
one agent's consecutive commits only once its run of commits is evidently coherent."""

from __future__ import annotations

import numpy as np

from projections.serving.bm25 import BM25Params
from projections.serving.partition import COHERENCE_LAGS, COHERENCE_WINDOW, SESSION_GAP_MS, Partition
from projections.text.lexical import index_text, query_text, terms

MIN = 60_000
FIRST_LINKED_RUN = COHERENCE_LAGS[0] + COHERENCE_WINDOW  # the first commit of a run that can be linked


def _partition(turns: list[tuple[str, str, int, str]], vectors: np.ndarray | None = None) -> Partition:
    """turns: (agent, text, commit ms, episode)."""
    part = Partition("ns", 4 if vectors is None else vectors.shape[1], BM25Params())
    for i, (agent, text, ms, episode) in enumerate(turns):
        vector = np.ones(4, dtype=np.float32) / 2 if vectors is None else vectors[i]
        part.add({"id": f"m{i}", "content": text}, vector, terms(index_text(text)), agent, ms, episode)
    return part


def _ids(part: Partition, query: str, context: float) -> list[str]:
    return [part.ids[s] for s, _ in part.lexical_search(terms(query_text(query)), 10, context)]


def _neighbours(part: Partition, mid: str) -> set[str]:
    return {part.ids[s] for s in part.neighbours(part.ids.index(mid)) if s >= 0}


def _walk(n: int, rng: np.random.Generator, dim: int = 256, keep: float = 0.9) -> np.ndarray:
    """Unit vectors drifting slowly (each close to the last, far ones less so): a conversation."""
    out = np.zeros((n, dim), dtype=np.float32)
    v = rng.standard_normal(dim)
    for i in range(n):
        v = keep * v / np.linalg.norm(v) + np.sqrt(1 - keep ** 2) * rng.standard_normal(dim) / np.sqrt(dim)
        out[i] = v / np.linalg.norm(v)
    return out


def _independent(n: int, rng: np.random.Generator, dim: int = 256) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _links(part: Partition) -> int:
    return int(np.count_nonzero(part.next[: part.size] >= 0))


def test_the_turn_after_a_match_is_found_through_its_context() -> None:
    part = _partition([("a", "Melanie: what do you do to relax after work?", 0, "chat-1"),
                       ("a", "Caroline: pottery, mostly bowls and mugs", 1, "chat-1"),
                       ("a", "Melanie: the weather was lovely today", 2, "chat-1"),
                       ("a", "Caroline: we went hiking near the lake", 3, "chat-1")])
    query = "what does Caroline do to relax after work"
    assert "m1" in _ids(part, query, 0.6)[:2]
    without = _ids(part, query, 0.0)
    assert without[0] == "m0" and without.index("m1") > without.index("m0")
    scores = dict(part.lexical_search(terms(query_text("relax")), 10, 0.6))
    own = dict(part.lexical_search(terms(query_text("relax")), 10, 0.0))
    assert scores[1] == np.float32(0.6 * own[0])  # only through its neighbour
    assert scores[2] == np.float32(0.3 * own[0])  # two turns out: half the weight
    assert 3 not in scores


def test_neighbours_follow_episodes_not_commit_adjacency() -> None:
    # one agent interleaves two conversations, one commit each in turn
    part = _partition([("a", "alpha asks about the harbour", 0, "ep-a"),
                       ("a", "beta asks about the mountain", 1, "ep-b"),
                       ("a", "alpha hears it opens at six", 2, "ep-a"),
                       ("a", "beta hears it is closed in winter", 3, "ep-b"),
                       ("a", "alpha says thanks", 4, "ep-a"),
                       ("a", "beta says goodbye", 5, "ep-b")])
    assert _neighbours(part, "m0") == {"m2"}
    assert _neighbours(part, "m2") == {"m0", "m4"}
    assert _neighbours(part, "m3") == {"m1", "m5"}
    assert _ids(part, "harbour", 0.6) == ["m0", "m2", "m4"]       # its own episode only, in order
    assert _ids(part, "mountain", 0.6) == ["m1", "m3", "m5"]


def test_an_episode_links_across_agents_and_time_but_not_across_episodes() -> None:
    part = _partition([("a", "gamma one", 0, "task-9"),
                       ("b", "gamma two", 10 * SESSION_GAP_MS, "task-9"),   # another agent, much later
                       ("a", "gamma three", 10 * SESSION_GAP_MS + 1, "task-10")])
    assert _neighbours(part, "m0") == {"m1"} and _neighbours(part, "m1") == {"m0"}
    assert _neighbours(part, "m2") == set()


def test_a_removed_memory_neither_matches_nor_lends_context_and_its_neighbours_join() -> None:
    part = _partition([("a", "delta one", 0, "e"), ("a", "unrelated words", 1, "e"), ("a", "more words", 2, "e")])
    assert set(_ids(part, "delta", 0.6)) == {"m0", "m1", "m2"}
    part.remove(0)
    assert _ids(part, "delta", 0.6) == []
    part.remove(1)
    assert _neighbours(part, "m2") == set()
    part = _partition([("a", "delta one", 0, "e"), ("a", "unrelated words", 1, "e"), ("a", "more words", 2, "e")])
    part.remove(1)
    assert _neighbours(part, "m0") == {"m2"} and _ids(part, "delta", 0.6) == ["m0", "m2"]


def test_a_changed_memory_keeps_its_place_in_its_episode() -> None:
    part = _partition([("a", "epsilon one", 0, "e"), ("a", "words", 1, "e"), ("a", "more", 2, "e"),
                       ("a", "other episode", 3, "f")])
    part.remove(1)
    slot = part.add({"id": "m1", "content": "words, corrected"}, np.ones(4, dtype=np.float32) / 2,
                    terms(index_text("words, corrected")), "a", 4, "e", replacing=1)
    assert part.neighbours(slot) == (0, 2) and part.neighbours(0)[1] == slot and part.neighbours(2)[0] == slot
    part.add({"id": "m5", "content": "last of e"}, np.ones(4, dtype=np.float32) / 2, ["last"], "a", 5, "e")
    assert _neighbours(part, "m5") == {"m2"}  # the episode's tail is still its last commit


def test_without_an_episode_a_coherent_run_links_and_an_incoherent_one_never_does() -> None:
    rng = np.random.default_rng(7)
    n = 200
    texts = [("a", f"turn {i}", i * MIN // 10, "") for i in range(n)]
    conversation = _partition(texts, _walk(n, rng))
    assert _links(conversation) == n - 1                      # back to the run's first commit
    for vectors in (_independent(n, rng), _walk(n, rng)[rng.permutation(n)]):  # facts; a shuffled conversation
        assert _links(_partition(texts, vectors)) == 0
    short = _partition(texts[: FIRST_LINKED_RUN - 1], _walk(FIRST_LINKED_RUN - 1, rng))
    assert _links(short) == 0                                 # too short to tell: no guess
    # two conversations, interleaved one commit each: no links either
    a, b = _walk(n // 2, rng), _walk(n // 2, rng)
    assert _links(_partition(texts, np.stack([v for pair in zip(a, b) for v in pair]))) == 0


def test_a_run_is_one_agent_within_the_session_gap() -> None:
    rng = np.random.default_rng(8)
    n = 150
    vectors = _walk(n, rng)
    other_agent = [("b" if i == 100 else "a", f"turn {i}", i, "") for i in range(n)]
    part = _partition(other_agent, vectors)
    assert part.neighbours(100) == (-1, -1) and part.neighbours(99)[1] == -1
    assert _links(part) == 99                                  # the run before it; the one after is too short
    gap = [("a", f"turn {i}", i + (SESSION_GAP_MS + 1 if i >= 100 else 0), "") for i in range(n)]
    part = _partition(gap, vectors)
    assert part.neighbours(100)[0] == -1 and _links(part) == 99


def test_context_zero_is_plain_bm25_and_both_search_paths_agree() -> None:
    rng = np.random.default_rng(9)
    n = 120
    texts = [("a", ("common " if i % 3 == 0 else "") + ("rare" if i == 60 else f"word{i}"), i, "") for i in range(n)]
    part = _partition(texts, _walk(n, rng))
    assert _links(part) == n - 1
    live = np.ones(part.size, dtype=bool)
    for query in ("common", "rare", "common rare"):         # many matches (one pass) and few (the matches only)
        q = terms(query_text(query))
        assert part.lexical_search(q, 200, 0.0) == part.lexical.search(q, 200, live)
        own = dict(part.lexical.search(q, 200, live))
        expected = {}
        for s in range(part.size):
            p, nx = part.neighbours(s)
            p2 = part.neighbours(p)[0] if p >= 0 else -1
            n2 = part.neighbours(nx)[1] if nx >= 0 else -1
            score = own.get(s, 0.0) + 0.6 * max(own.get(p, 0.0), own.get(nx, 0.0)) \
                + 0.3 * max(own.get(p2, 0.0), own.get(n2, 0.0))
            if score > 0:
                expected[s] = score
        got = dict(part.lexical_search(q, 200, 0.6))
        assert set(got) == set(expected)
        assert all(abs(got[s] - expected[s]) < 1e-5 for s in got)


def test_compaction_keeps_the_links() -> None:
    part = _partition([("a", f"zeta {i}", i, "e" if i % 2 else "f") for i in range(10)])
    for slot in (2, 3):
        part.remove(slot)
    new, moved = part.compacted()
    assert new.size == 8 and new.live_count == 8
    for old, slot in moved.items():
        before, after = part.neighbours(old)
        assert new.neighbours(slot) == (moved.get(before, -1), moved.get(after, -1))
    new.add({"id": "m10", "content": "zeta 10"}, np.ones(4, dtype=np.float32) / 2, ["zeta"], "a", 10, "e")
    assert _neighbours(new, "m10") == {"m9"}
