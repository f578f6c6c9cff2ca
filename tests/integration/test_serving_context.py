"""Context neighbours over a real projected LanceDB table: the serving index loads each memory's
episode (`derived_from`) and links the memories of one episode in commit order, whatever was
committed in between; memories without one are linked only when their run is coherent."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from events.catalogue import MemoryCommitted, MemoryCorrected, MemoryDeleted, new_event
from projections.core.runner import ProjectionRunner
from projections.memories.projector import MemoriesProjector
from projections.serving.index import ServingIndex
from projections.text.lexical import query_text
from tests.hash_embedder import HashEmbedder


def commit(mid: str, content: str, ns: str, episode: str = "", agent: str = "alice"):
    return new_event(MemoryCommitted(mid, content, ns, "fact", "system_fact", derived_from=episode),
                     ns=ns, agent=agent)


async def project(store, directory: Path, embedder) -> None:
    p = MemoriesProjector(directory, embedder)
    await ProjectionRunner(store, p, publish=False).catch_up()
    await p.close()


def neighbours(index: ServingIndex, mid: str) -> set[str]:
    ns, slot = index._state.where[mid]
    part = index._state.parts[ns]
    return {part.ids[s] for s in part.neighbours(slot) if s >= 0}


INTERLEAVED = [("h0", "harbour question: when does the harbour ferry leave", "ep-harbour"),
               ("m0", "mountain question: is the summit trail open", "ep-mountain"),
               ("h1", "at six every morning, from pier two", "ep-harbour"),
               ("m1", "closed from November to March", "ep-mountain"),
               ("h2", "thanks, see you there", "ep-harbour"),
               ("m2", "great, goodbye", "ep-mountain")]


async def test_neighbours_follow_the_episode_not_commit_adjacency(store, tmp_path: Path) -> None:
    emb = HashEmbedder(dim=16)
    await store.append([commit(mid, text, "shared", ep) for mid, text, ep in INTERLEAVED])
    await project(store, tmp_path, emb)
    index = ServingIndex(tmp_path)
    assert await index.wait_ready()
    assert neighbours(index, "h1") == {"h0", "h2"} and neighbours(index, "m1") == {"m0", "m2"}
    assert neighbours(index, "h0") == {"h1"} and neighbours(index, "m2") == {"m1"}
    # the answer turn is found through the question it follows in its own episode
    hits = [m for m, _ in await index.alexical(query_text("when does the ferry leave"), ["shared"], 10, context=0.6)]
    assert hits[:2] == ["h0", "h1"] and not {"m0", "m1", "m2"} & set(hits)
    assert [m for m, _ in await index.alexical(query_text("when does the ferry leave"), ["shared"], 10)] == ["h0"]

    # followed live: a new commit joins its episode's end; a deleted one is spliced out
    await store.append([commit("h3", "one more harbour note", "shared", "ep-harbour"),
                        new_event(MemoryDeleted("h1", "shared", 2, "obsolete"), ns="shared", agent="alice")])
    await project(store, tmp_path, emb)
    assert await index.refresh()
    assert neighbours(index, "h0") == {"h2"} and neighbours(index, "h3") == {"h2"}
    # a correction keeps its place in the episode
    await store.append([new_event(MemoryCorrected("m1", "shared", 2, "closed from December to March", "typo"),
                                  ns="shared", agent="alice")])
    await project(store, tmp_path, emb)
    assert await index.refresh()
    assert neighbours(index, "m1") == {"m0", "m2"}
    await index.close()


async def test_an_episode_is_scoped_to_its_namespace(store, tmp_path: Path) -> None:
    emb = HashEmbedder(dim=16)
    await store.append([commit("a0", "first in a", "alice-main", "ep-1"),
                        commit("b0", "first in b", "bob-main", "ep-1", agent="bob"),
                        commit("a1", "second in a", "alice-main", "ep-1")])
    await project(store, tmp_path, emb)
    index = ServingIndex(tmp_path)
    assert await index.wait_ready()
    assert neighbours(index, "a0") == {"a1"} and neighbours(index, "b0") == set()
    await index.close()


async def test_without_episodes_unrelated_commits_are_not_neighbours(store, tmp_path: Path) -> None:
    # independent facts, one after another by one agent: adjacency is no evidence, so context
    # changes nothing (the ranking equals context 0)
    emb = HashEmbedder(dim=64)
    facts = [f"fact {i}: host{i} listens on port {7000 + i} in region r{i % 7}" for i in range(120)]
    await store.append([commit(f"f{i}", text, "shared") for i, text in enumerate(facts)])
    await project(store, tmp_path, emb)
    index = ServingIndex(tmp_path)
    assert await index.wait_ready()
    part = index._state.parts["shared"]
    assert np.count_nonzero(part.next[: part.size] >= 0) == 0
    for query in ("port 7005", "region r3", "host17"):
        q = query_text(query)
        assert await index.alexical(q, ["shared"], 20, context=0.6) == await index.alexical(q, ["shared"], 20)
    await index.close()
