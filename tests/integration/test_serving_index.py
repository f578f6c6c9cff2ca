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
    assert [c for _, c in mine] == pytest.approx([c for _, c in theirs], abs=1e-5)
    lexical = await index.alexical(query_text("port 8007"), ns, 5)
    assert lexical[0][0] == "a7"
    assert (await reader.alexical(query_text("port 8007"), ns, 5))[0][0] == "a7"
    rows = await index.arows(["a7", "s1", "missing"], vectors=True)
    assert set(rows) == {"a7", "s1"} and rows["a7"]["content"].endswith("8007")
    assert np.allclose(rows["a7"]["vector"], q, atol=1e-6)
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
