"""Disk per memory (issue 19, part 4): the memories table keeps half-precision vectors (a table made
before keeps its float32 ones and is folded on as it is, with the same digest), the reader's dense
scores are exact cosines whatever LanceDB's index reports, and the versions a `maintain` had to keep
are pruned one retention later even when nothing more is written."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from events.catalogue import MemoryCommitted, RecallServed, new_event
from events.envelope import Event
from projections.memories import schema as memories_schema_module
from projections.memories.projector import MemoriesProjector
from projections.memories.reader import MemoriesReader
from tests.hash_embedder import HashEmbedder


def commit(mid: str, content: str, ns: str = "shared") -> Event:
    return new_event(MemoryCommitted(mid, content, ns, "fact", "system_fact"), ns=ns, agent="alice")


async def append(store, *events: Event) -> list[Event]:
    res = await store.append(list(events))
    return [await store.get(p) for p in res.positions]


async def vector_type(p: MemoriesProjector) -> pa.DataType:
    return (await (await p._table.open()).schema()).field("vector").type.value_type


async def test_vectors_are_half_precision_and_an_older_float32_table_folds_on(store, tmp_path: Path,
                                                                               monkeypatch) -> None:
    embedder = HashEmbedder(dim=16)
    first = await append(store, *[commit(f"m{i}", f"memory {i}") for i in range(20)])
    later = await append(store, *[commit(f"n{i}", f"later memory {i}") for i in range(5)])

    new = MemoriesProjector(tmp_path / "new", embedder)
    await new.apply(first)
    await new.apply(later)
    assert await vector_type(new) == pa.float16()

    monkeypatch.setattr(memories_schema_module, "VECTOR_TYPE", pa.float32())   # as made by the previous build
    old = MemoriesProjector(tmp_path / "old", embedder)
    await old.apply(first)
    await old.close()
    monkeypatch.undo()
    old = MemoriesProjector(tmp_path / "old", embedder)   # this build: no rebuild asked, float32 kept
    old.check_build()
    await old.apply(later)
    assert await vector_type(old) == pa.float32()
    assert await old.digest() == await new.digest()

    for directory, tolerance in ((tmp_path / "new", 1e-3), (tmp_path / "old", 1e-6)):
        reader = MemoriesReader(directory)
        rows = await reader.arows(["m3", "n2"], vectors=True)
        for mid, text in (("m3", "memory 3"), ("n2", "later memory 2")):
            assert rows[mid]["vector"].dtype == np.float32
            np.testing.assert_allclose(rows[mid]["vector"], embedder.vector(text), atol=tolerance)
        reader.close()
    await new.close()
    await old.close()


async def test_dense_scores_are_exact_cosines_through_the_vector_index(store, tmp_path: Path) -> None:
    embedder = HashEmbedder(dim=16)
    p = MemoriesProjector(tmp_path, embedder, compact_after_writes=0, compact_after_rows=0, vector_index_min_rows=200)
    await p.apply(await append(store, *[commit(f"m{i}", f"memory number {i}") for i in range(300)]))
    await p.maintain()
    assert any(list(ix.columns) == ["vector"] for ix in await (await p._table.open()).list_indices())
    reader = MemoriesReader(tmp_path)
    query = embedder.vector("memory number 7") + 0.3 * embedder.vector("memory number 8")
    hits = await reader.adense(query, ["shared"], 5)
    assert hits[0][0] in ("m7", "m8")
    for mid, score in hits:
        number = int(mid[1:])
        exact = float(query @ embedder.vector(f"memory number {number}") / np.linalg.norm(query))
        assert score == pytest.approx(exact, abs=2e-3)   # half-precision vectors; the index says ~2x the distance
    rows = reader.search(query, ["shared"], 5)
    assert [(r["id"], round(r["score"], 5)) for r in rows] == [(m, round(s, 5)) for m, s in hits]
    reader.close()
    await p.close()


def data_files(directory: Path, table: str = "memories") -> int:
    return len(list((directory / f"{table}.lance" / "data").iterdir()))


async def test_versions_kept_by_maintain_are_pruned_one_retention_later(store, tmp_path: Path) -> None:
    embedder = HashEmbedder(dim=16)
    p = MemoriesProjector(tmp_path, embedder, compact_after_writes=0, compact_after_rows=0,
                          retention=timedelta(seconds=1))

    async def live_fragments() -> int:
        return int((await (await p._table.open()).stats())["fragment_stats"]["num_fragments"])

    for i in range(6):   # six small fragments
        await p.apply(await append(store, *[commit(f"m{i}-{k}", f"memory {i} {k}") for k in range(5)]))
    assert not p.upkeep_due()
    await p.maintain()   # compacted; the fragments it replaced are kept (younger than the retention)
    kept = data_files(tmp_path)
    assert kept > await live_fragments() and not p.upkeep_due()
    digest = await p.digest()
    await p.maintain()   # nothing written, not due yet: nothing done
    assert data_files(tmp_path) == kept
    for _ in range(3):   # a run may compact further, and then keeps its own replaced files one more round
        await asyncio.sleep(2.1)   # retention + 1 s
        assert p.upkeep_due()
        audit = await append(store, new_event(RecallServed("q", ("shared",), ("m0-0",), (0.9,)), ns="shared",
                                              agent="alice"))
        await p.advance(audit[0].position)   # recall audits only: the runner skips the batch, the upkeep runs
        assert await p.load_checkpoint() == audit[0].position
        if not p.upkeep_due() and p._prune_at is None:
            break
    assert p._prune_at is None
    assert data_files(tmp_path) == await live_fragments() < kept   # only the live table's files are left
    assert await p.digest() == digest
    await p.close()


async def test_plain_tables_prune_what_maintain_kept_one_retention_later(store, tmp_path: Path) -> None:
    from events.catalogue import MemoryForgotten
    from projections.tombstones.projector import TombstonesProjector

    p = TombstonesProjector(tmp_path, compact_after_writes=0, retention=timedelta(seconds=1))
    for i in range(5):
        await p.apply(await append(store, new_event(MemoryForgotten(f"m{i}", "shared", 2, "lru", f"content {i}"),
                                                    ns="shared", agent="scheduler")))
    await p.maintain()
    kept, digest = data_files(tmp_path, "tombstones"), await p.digest()
    assert kept > 1 and not p.upkeep_due()
    for _ in range(3):
        await asyncio.sleep(2.1)
        assert p.upkeep_due()
        audit = await append(store, new_event(RecallServed("q", ("shared",), ("m0",), (0.9,)), ns="shared",
                                              agent="alice"))
        await p.advance(audit[0].position)
        if p._prune_at is None:
            break
    assert p._prune_at is None and data_files(tmp_path, "tombstones") < kept and await p.digest() == digest
    await p.close()
