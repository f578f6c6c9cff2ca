"""The serving index over a real projected LanceDB table: load, follow the checkpoint, reload
after a rebuild, and agree with LanceDB's own searches."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from lancedb.index import BTree

from events.catalogue import MemoryCommitted, MemoryDeleted, new_event
from tests.hash_embedder import HashEmbedder
from projections.memories.projector import MemoriesProjector
from projections.memories.reader import MemoriesReader
from projections.core.runner import ProjectionRunner
from projections.serving.index import ServingIndex
from projections.text.lexical import query_text
from projections.serving.dense import IvfParams


def commit(mid: str, content: str, ns: str):
    return new_event(MemoryCommitted(mid, content, ns, "fact", "system_fact"), ns=ns, agent="alice")


def delete(mid: str, ns: str, version: int = 2):
    return new_event(MemoryDeleted(mid, ns, version, "obsolete"), ns=ns, agent="alice")


async def project(store, directory: Path, embedder) -> None:
    p = MemoriesProjector(directory, embedder)
    await ProjectionRunner(store, p, publish=False).catch_up()
    await p.close()


async def test_loads_follows_deltas_and_matches_lancedb(store, tmp_path: Path) -> None:
    emb = HashEmbedder(dim=32)
    await store.append([commit(f"a{i}", f"alpha note number {i} about port {8000 + i}", "alice-main")
                        for i in range(30)] + [commit("s1", "shared fact about nginx", "shared")])
    await project(store, tmp_path, emb)
    index = ServingIndex(tmp_path)
    assert await index.refresh() is False  # the first call starts the load
    assert await index.wait_ready()
    reader = MemoriesReader(tmp_path)
    q = emb.vector("alpha note number 7 about port 8007")
    ns = ["alice-main", "shared"]
    mine, theirs = await index.adense(q, ns, 5), await reader.adense(q, ns, 5)
    assert [m for m, _ in mine] == [m for m, _ in theirs]
    # the index holds int8 vectors (projections.serving.vectors): cosines within a few 1e-4 of LanceDB's
    assert [c for _, c in mine] == pytest.approx([c for _, c in theirs], abs=3e-3)
    lexical = await index.alexical(query_text("port 8007"), ns, 5)
    assert lexical[0][0] == "a7"
    assert (await reader.alexical(query_text("port 8007"), ns, 5))[0][0] == "a7"
    rows = await index.arows(["a7", "s1", "missing"], vectors=True)
    assert set(rows) == {"a7", "s1"} and rows["a7"]["content"].endswith("8007")
    assert np.allclose(rows["a7"]["vector"], q, atol=3e-3)
    rows["a7"].pop("vector")  # callers may mutate what they get
    assert "vector" in (await index.arows(["a7"], vectors=True))["a7"]

    # the projector moves on: the next refresh reads just the changed rows
    await store.append([delete("a7", "alice-main"), commit("a99", "a brand new alpha note", "alice-main")])
    await project(store, tmp_path, emb)
    assert await index.refresh()
    dense = [m for m, _ in await index.adense(q, ns, 40)]
    assert "a7" not in dense and "a99" in dense and len(dense) == 31
    assert not (await index.arows(["a7"]))
    assert index.stats()["namespaces"]["alice-main"]["rows"] == 30

    # the projection is rebuilt from scratch (one table version): the index notices and reloads
    shutil.rmtree(tmp_path)
    await project(store, tmp_path, emb)
    assert await index.refresh() is False
    assert await index.wait_ready()
    assert sorted(m for m, _ in await index.adense(q, ns, 40)) == sorted(dense)
    reader.close()
    await index.close()


async def test_an_empty_projection_serves_nothing_then_catches_up(store, tmp_path: Path) -> None:
    emb = HashEmbedder(dim=16)
    index = ServingIndex(tmp_path)
    assert await index.wait_ready()
    assert await index.adense(emb.vector("x"), ["shared"], 5) == []
    await store.append([commit("s1", "first shared memory", "shared")])
    await project(store, tmp_path, emb)
    assert await index.refresh()
    assert [m for m, _ in await index.alexical("first", ["shared"], 5)] == ["s1"]
    await index.close()


async def test_large_namespace_gets_an_ivf_partitioning(store, tmp_path: Path) -> None:
    emb = HashEmbedder(dim=16)
    await store.append([commit(f"m{i}", f"memory {i} word{i % 97}", "shared") for i in range(600)])
    await project(store, tmp_path, emb)
    index = ServingIndex(tmp_path, ivf=IvfParams(min_rows=500, scan_fraction=1.0))
    assert await index.wait_ready()
    assert index.stats()["namespaces"]["shared"]["ivf_lists"] > 1
    q = emb.vector("memory 42 word42")
    assert (await index.adense(q, ["shared"], 1))[0][0] == "m42"  # scanning every list == exact
    await index.close()


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\)")
async def test_loads_when_the_checkpointed_table_version_was_cleaned_up(store, tmp_path: Path) -> None:
    from datetime import timedelta

    import lancedb

    emb = HashEmbedder(dim=16)
    await store.append([commit(f"m{i}", f"memory {i}", "shared") for i in range(5)])
    await project(store, tmp_path, emb)
    table = lancedb.connect(str(tmp_path)).open_table("memories")
    table.create_index("agent_id", config=BTree())   # a newer version than the checkpoint's
    table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)  # compaction: newer version, old gone
    from projections.core import checkpoint as checkpoint_file
    pinned = checkpoint_file.load(tmp_path).table_version
    with pytest.raises(ValueError):
        await (await lancedb.connect_async(str(tmp_path))).open_table("memories", version=pinned)
    index = ServingIndex(tmp_path)
    assert await index.wait_ready()
    assert index.stats()["rows"] == 5
    await index.close()


async def test_a_changed_row_keeps_its_slot_unless_its_text_changed(store, tmp_path: Path) -> None:
    from events.catalogue import MemoryCorrected, MemoryFeedback

    emb = HashEmbedder(dim=16)
    await store.append([commit(f"m{i}", f"turn {i}", "shared") for i in range(3)])
    await project(store, tmp_path, emb)
    index = ServingIndex(tmp_path)
    assert await index.wait_ready()
    part = index._state.parts["shared"]
    await store.append([new_event(MemoryFeedback("m1", "shared", "useful"), ns="shared", agent="bob")])
    await project(store, tmp_path, emb)
    assert await index.refresh()
    assert index._state.where["m1"] == ("shared", 1) and part.size == 3  # in place: neighbours intact
    await store.append([new_event(MemoryCorrected("m1", "shared", 2, "turn one, corrected", "typo"), ns="shared",
                                  agent="bob")])
    await project(store, tmp_path, emb)
    assert await index.refresh()
    assert index._state.where["m1"] == ("shared", 3)  # new text: a new slot
    assert (await index.arows(["m1"]))["m1"]["content"] == "turn one, corrected"
    assert [m for m, _ in await index.alexical("corrected", ["shared"], 5)] == ["m1"]
    await index.close()


async def test_a_first_load_equals_following_every_delta(store, tmp_path: Path) -> None:
    """The first load places rows by position and links them afterwards (two passes over the
    table); an index that followed the projection batch by batch must hold the same rows and
    links. (A changed row — feedback, a correction — is ordered by its latest position on a load,
    by its commit while followed, and a deleted one never joins a run on a load: links may then
    differ, so changes and deletions are compared by rows and searches only.)"""
    from events.catalogue import MemoryCorrected, MemoryFeedback

    emb = HashEmbedder(dim=16)
    follower = ServingIndex(tmp_path, ivf=IvfParams(min_rows=10**9))
    assert await follower.wait_ready()
    for step in range(4):
        batch = [new_event(MemoryCommitted(f"e{step}-{i}", f"episode {step} turn {i} about topic{i % 5}", "shared",
                                           "fact", "system_fact", derived_from=f"ep{i % 3}"), ns="shared",
                           agent="alice") for i in range(12)]
        batch += [commit(f"r{step}-{i}", f"run turn {step}.{i} word{i % 7}", ["alice-main", "bob-main"][i % 2])
                  for i in range(80)]
        await store.append(batch)
        await project(store, tmp_path, emb)
        assert await follower.refresh()
    fresh = ServingIndex(tmp_path, ivf=IvfParams(min_rows=10**9))
    assert await fresh.wait_ready()
    a, b = follower._state, fresh._state
    assert len(a.where) == len(b.where) == 4 * 92
    for ns in ("shared", "alice-main", "bob-main"):
        pa_, pb = a.parts[ns], b.parts[ns]
        live_a = [pa_.ids[s] for s in range(pa_.size) if pa_.live[s]]
        live_b = [pb.ids[s] for s in range(pb.size) if pb.live[s]]
        assert sorted(live_a) == sorted(live_b)

        def links(part, mid, where):
            slot = where[mid][1]
            return tuple(part.ids[s] if s >= 0 else None for s in part.neighbours(slot))
        for mid in live_a:
            assert links(pa_, mid, a.where) == links(pb, mid, b.where), mid
    await fresh.close()
    await store.append([new_event(MemoryFeedback("e3-0", "shared", "useful"), ns="shared", agent="bob"),
                        new_event(MemoryCorrected("e3-1", "shared", 2, "corrected text", "typo"), ns="shared",
                                  agent="bob"), delete("r2-2", "alice-main"), delete("r0-4", "alice-main")])
    await project(store, tmp_path, emb)
    assert await follower.refresh()
    fresh = ServingIndex(tmp_path, ivf=IvfParams(min_rows=10**9))
    assert await fresh.wait_ready()
    ids = [f"e{s}-{i}" for s in range(4) for i in range(12)] + [f"r{s}-{i}" for s in range(4) for i in range(80)]
    rows = await follower.arows(ids)
    assert rows == await fresh.arows(ids) and len(rows) == len(ids) - 2
    assert rows["e3-1"]["content"] == "corrected text"
    for text in ("episode 2 turn 3 about topic3", "corrected", "run turn 1.5 word5"):
        for ns in (["shared"], ["alice-main", "bob-main"]):
            assert await follower.alexical(query_text(text), ns, 10) == await fresh.alexical(query_text(text), ns, 10)
            x, y = await follower.adense(emb.vector(text), ns, 10), await fresh.adense(emb.vector(text), ns, 10)
            assert [m for m, _ in x] == [m for m, _ in y]   # scores: to float rounding (block vs gathered rows)
            assert [c for _, c in x] == pytest.approx([c for _, c in y], abs=1e-6)
    await follower.close()
    await fresh.close()


async def test_a_big_delta_reloads_instead_of_folding_on_the_event_loop(store, tmp_path: Path, monkeypatch) -> None:
    from projections.serving import index as serving_index

    emb = HashEmbedder(dim=16)
    await store.append([commit(f"m{i}", f"memory {i}", "shared") for i in range(10)])
    await project(store, tmp_path, emb)
    index = ServingIndex(tmp_path)
    assert await index.wait_ready()
    monkeypatch.setattr(serving_index, "BIG_DELTA", 5)
    await store.append([commit(f"n{i}", f"newer memory {i}", "shared") for i in range(4)])
    await project(store, tmp_path, emb)
    assert await index.refresh()                      # 4 rows: applied in place
    assert index.stats()["rows"] == 14
    await store.append([commit(f"o{i}", f"newest memory {i}", "shared") for i in range(8)])
    await project(store, tmp_path, emb)
    assert await index.refresh() is False             # 8 rows: a reload (recall reads LanceDB meanwhile)
    assert await index.wait_ready()
    assert index.stats()["rows"] == 22
    assert [m for m, _ in await index.alexical("newest 7", ["shared"], 1)] == ["o7"]
    await index.close()


def test_the_row_arena_round_trips_and_rewrites_its_garbage(monkeypatch) -> None:
    from projections.memories.reader import RESULT_COLUMNS
    from projections.serving import rows as row_arena
    from projections.serving.rows import RowArena

    monkeypatch.setattr(row_arena, "_MIN_GARBAGE", 0)
    arena = RowArena("shared")
    full = {c: f"{c} 值" for c in RESULT_COLUMNS} | {"id": "m0", "namespace": "shared", "version": 3,
                                                     "importance": 0.30000001192092896, "tags": ["a", "标签"],
                                                     "conflicts": [], "volatile_flag": True}
    assert arena.append(full) == 0
    assert arena.append({"id": "m1", "content": "just two columns"}) == 1
    assert arena.get(0, "m0") == full and arena.get(1, "m1") == {"id": "m1", "content": "just two columns"}
    for v in range(5):
        arena.replace(0, full | {"version": 4 + v})
    arena.remove(1)
    assert arena.get(1, "m1") is None and arena.get(0, "m0") == full | {"version": 8}
    assert arena.nbytes < 2 * len(row_arena._encode(full)) + 16 * 2 + 64   # the garbage was rewritten away


async def test_a_loaded_index_is_out_of_the_cyclic_collectors_scans(store, tmp_path: Path) -> None:
    """Each term's postings are GC-tracked arrays: a full collection walked them all (76 ms at 100k
    memories) until the load froze them. Reference counting still frees a dropped index."""
    import gc
    import weakref

    emb = HashEmbedder(dim=32)
    await store.append([commit(f"a{i}", f"note {i} with its own word w{i}x", "alice-main") for i in range(40)])
    await project(store, tmp_path, emb)
    gc.unfreeze()
    index = ServingIndex(tmp_path)
    assert await index.wait_ready()
    part = index._state.parts["alice-main"]
    tracked = {id(o) for o in gc.get_objects()}
    held = [part, part.ids, part.episode, part.lexical, part.rows]
    assert all(gc.is_tracked(o) for o in held)
    assert not any(id(o) in tracked for o in held)        # frozen: no collection scans them
    assert gc.get_freeze_count() >= len(held)
    gone = weakref.ref(part)
    await index.close()
    del part, held
    assert gone() is None                                  # freed all the same


async def test_many_small_deltas_are_frozen_like_a_load(store, tmp_path: Path, monkeypatch) -> None:
    import gc

    import projections.serving.index as serving

    monkeypatch.setattr(serving, "LOAD_BATCH", 12)
    emb = HashEmbedder(dim=32)
    await store.append([commit("a0", "the first note", "alice-main")])
    await project(store, tmp_path, emb)
    index = ServingIndex(tmp_path)
    assert await index.wait_ready()
    for round_ in range(4):                                # 5 rows each (a namespace a round): frozen after the third
        await store.append([commit(f"r{round_}-{i}", f"word{round_}x{i} arrives", f"ns{round_}-main")
                            for i in range(5)])
        await project(store, tmp_path, emb)
        assert await index.refresh()
    parts = index._state.parts
    tracked = {id(o) for o in gc.get_objects()}
    early = [o for ns in ("ns0-main", "ns2-main") for o in (parts[ns], parts[ns].ids, parts[ns].lexical)]
    late = [parts["ns3-main"], parts["ns3-main"].ids, parts["ns3-main"].lexical]
    assert not any(id(o) in tracked for o in early)        # applied before the freeze: frozen
    assert all(id(o) in tracked for o in late)             # after it: young, collected as usual
    await index.close()


async def test_the_gateway_keeps_the_index_at_the_checkpoint_while_no_recall_comes(store, tmp_path: Path) -> None:
    """A write burst with no recall used to leave the index behind until the next recall, which then
    reloaded it (more than BIG_DELTA rows) and left recalls to LanceDB meanwhile."""
    import asyncio
    from types import SimpleNamespace

    from gateway.process.gateway_steps import follow_serving_index
    from projections.core import checkpoint as checkpoint_file
    from tests.eventually import eventually

    emb = HashEmbedder(dim=32)
    await store.append([commit("a0", "the first note", "alice-main")])
    await project(store, tmp_path, emb)
    index = ServingIndex(tmp_path)
    assert await index.wait_ready()
    stopping = asyncio.Event()
    follower = asyncio.create_task(follow_serving_index(SimpleNamespace(index=index), stopping, every_s=0.05))
    try:
        await store.append([commit(f"a{i}", f"note number {i}", "alice-main") for i in range(1, 30)])
        await project(store, tmp_path, emb)
        want = checkpoint_file.load(tmp_path).position
        assert index.position != want
        await eventually(lambda: index.position == want, timeout_s=10, what="the index at the checkpoint")
        assert index.stats()["namespaces"]["alice-main"]["rows"] == 30
    finally:
        stopping.set()
        await asyncio.wait_for(follower, 5)
        await index.close()
