"""The memories projector against a real Redis log and a real LanceDB table in tmp_path. A crash between the
rows and the checkpoint, then a restart: tests/integration/test_projector_contract.py."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from events.catalogue import AgentRegistered, MemoryCommitted, MemoryDeleted, RecallServed, new_event
from events.envelope import Event, UnknownPayload
from events.hlc import HLC, iso_from_ms
from projections.core import checkpoint as checkpoint_file
from projections.core.checkpoint import Checkpoint
from projections.core.errors import ProjectionBusy, RebuildRequired
from tests.hash_embedder import HashEmbedder
from projections.memories.projector import MemoriesProjector
from projections.memories.schema import SCHEMA_VERSION
from projections.memories.reader import MemoriesReader


def commit(mid: str, content: str, ns: str = "shared", agent: str = "alice", **kw) -> Event:
    return new_event(MemoryCommitted(mid, content, ns, kw.pop("category", "fact"), kw.pop("decay_class", "system_fact"),
                                     **kw), ns=ns, agent=agent)


def delete(mid: str, version: int, reason: str = "", ns: str = "shared", agent: str = "bob") -> Event:
    return new_event(MemoryDeleted(mid, ns, version, reason), ns=ns, agent=agent)


async def append(store, *events: Event) -> list[Event]:
    res = await store.append(list(events))
    return [await store.get(p) for p in res.positions]


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder(dim=16)


async def test_commit_and_delete_fold_into_rows(store, tmp_path: Path, embedder) -> None:
    evs = await append(store,
                       commit("m1", "nginx listens on 8080", tags=("ops", "nginx"), depends_on=("m0",), kind="L2",
                              tier="core", source="user_verbal", derived_from="ep-1"),
                       commit("m2", "用户偏好：结论先行", ns="alice-main", category="preference",
                              decay_class="user_pref"))
    dels = await append(store, delete("m1", 2, "duplicate"))
    p = MemoriesProjector(tmp_path, embedder)
    await p.apply(evs + dels)
    assert await p.load_checkpoint() == dels[0].position

    reader = MemoriesReader(tmp_path)
    m1, m2 = reader.get("m1"), reader.get("m2")
    ts1 = iso_from_ms(HLC.parse(evs[0].hlc).wall_ms)
    assert m1 is not None and m2 is not None
    assert (m1["content"], m1["namespace"], m1["agent_id"], m1["kind"], m1["tier"], m1["source"]) == \
        ("nginx listens on 8080", "shared", "alice", "L2", "core", "user_verbal")
    assert m1["tags"] == ["ops", "nginx"] and m1["depends_on"] == ["m0"] and m1["derived_from"] == "ep-1"
    assert m1["timestamp"] == ts1 and m1["last_recalled_at"] == ""
    assert m1["is_deleted"] is True and m1["version"] == 2 and m1["position"] == dels[0].position
    assert [h["reason"] for h in m1["version_history"]] == ["initial", "deleted: duplicate"]
    assert m1["version_history"][0] == {"version": 1, "content": "nginx listens on 8080", "updated_by": "alice",
                                        "source": "user_verbal", "trigger": "none", "reason": "initial",
                                        "timestamp": ts1}
    assert m1["version_history"][1]["updated_by"] == "bob"
    assert m1["version_history"][1]["timestamp"] == iso_from_ms(HLC.parse(dels[0].hlc).wall_ms)
    assert m2["is_deleted"] is False and m2["version"] == 1 and m2["category"] == "preference"
    assert (m2["importance"], m2["quality_score"], m2["freshness"]) == (1.0, 0.5, "fresh")
    assert (m2["recall_count"], m2["useful_count"], m2["not_useful_count"]) == (0, 0, 0)
    assert m2["volatile_flag"] is False and m2["model"] == embedder.model_id

    table = await p._table.open()
    schema = await table.schema()
    assert schema.field("vector").type.list_size == embedder.dim
    assert str(schema.field("importance").type) == "float" and str(schema.field("version").type) == "int32"
    assert any(ix.columns == ["id"] and ix.index_type == "BTree" for ix in await table.list_indices())
    await p.close()


async def test_applying_a_batch_twice_changes_nothing(store, tmp_path: Path, embedder) -> None:
    evs = await append(store, commit("a", "one"), commit("b", "two"), delete("a", 2, "x"))
    p = MemoriesProjector(tmp_path, embedder)
    await p.apply(evs)
    first, version = await p.digest(), await p._table.version()
    await p.apply(evs)
    await p.apply(evs[1:])
    assert await p.digest() == first and await p._table.version() == version
    await p.close()
    again = MemoriesProjector(tmp_path, embedder)  # a new instance that re-reads the checkpoint
    await again.apply(evs)
    assert await again.digest() == first
    await again.close()


async def test_unknown_and_unfolded_events_advance_the_checkpoint(store, tmp_path: Path, embedder) -> None:
    evs = await append(store,
                       Event(type="future.event", data=UnknownPayload({"x": 1}), ns="shared", agent="a"),
                       new_event(AgentRegistered("a", "generic", "a-main", "a-ephemeral", "h" * 64), ns="a-main",
                                 agent="a"),
                       new_event(RecallServed("q", ("shared",), (), ()), ns="shared", agent="a"))
    assert (await store.get(evs[0].position)).data == UnknownPayload({"x": 1})
    p = MemoriesProjector(tmp_path, embedder)
    await p.apply(evs)
    assert await p.load_checkpoint() == evs[-1].position
    assert await p.digest() == await MemoriesProjector(tmp_path / "empty", embedder).digest()  # no rows
    assert not await p._table.exists()
    await p.close()


async def test_replaying_over_existing_rows_without_a_checkpoint(store, tmp_path: Path, embedder) -> None:
    evs = await append(store, commit("a", "alpha"), commit("b", "beta"), delete("a", 2, "gone"), commit("c", "c"))
    p = MemoriesProjector(tmp_path, embedder)
    await p.apply(evs[:3])
    await p.apply(evs[3:])
    expected = await p.digest()
    await p.close()
    (tmp_path / "checkpoint.json").unlink()  # lost: every event is delivered again
    again = MemoriesProjector(tmp_path, embedder)
    await again.apply(evs[:2])
    await again.apply(evs[2:])
    assert await again.digest() == expected
    await again.close()
    assert [h["reason"] for h in MemoriesReader(tmp_path).get("a")["version_history"]] == ["initial", "deleted: gone"]


async def test_deletes_find_rows_in_the_unindexed_tail_and_after_restart(store, tmp_path: Path, embedder) -> None:
    p = MemoriesProjector(tmp_path, embedder, compact_after_writes=0)
    for i in range(12):  # twelve small writes: twelve unindexed fragments
        await p.apply(await append(store, commit(f"m{i}", f"memory {i}")))
    await p.apply(await append(store, delete("m11", 2, "tail")))
    await p.maintain()  # everything indexed now
    await p.apply(await append(store, delete("m3", 2, "indexed"), commit("n1", "new one")))
    await p.close()
    fresh = MemoriesProjector(tmp_path, embedder)  # does not know which keys are unindexed
    await fresh.apply(await append(store, delete("n1", 2, "after restart")))
    await fresh.close()
    reader = MemoriesReader(tmp_path)
    assert {m: reader.get(m)["is_deleted"] for m in ("m11", "m3", "n1", "m0")} == \
        {"m11": True, "m3": True, "n1": True, "m0": False}
    assert reader.count() == 10


async def test_a_long_unindexed_tail_gets_the_key_indexed_again(store, tmp_path: Path, embedder, monkeypatch) -> None:
    """A rebuild never optimizes: once REINDEX_TAIL keys were written past the key's index, it is built
    again over every row, and the rows it covers are still found (and updated in place) after that."""
    from projections.core import lance

    monkeypatch.setattr(lance, "REINDEX_TAIL", 5)
    p = MemoriesProjector(tmp_path, embedder, compact_after_writes=0, compact_after_rows=0)

    async def unindexed() -> int | None:
        return await p._table._unindexed_rows()

    await p.apply(await append(store, *(commit(f"m{i}", f"memory {i}") for i in range(3))))   # the index is made
    await p.apply(await append(store, *(commit(f"n{i}", f"next {i}") for i in range(3))))
    assert await unindexed() == 3 and p._table._tail == {"n0", "n1", "n2"}
    await p.apply(await append(store, commit("o0", "other 0"), commit("o1", "other 1")))   # 5 past it: again
    assert await unindexed() == 0 and p._table._tail == set()
    digest = await p.digest()
    await p.apply(await append(store, delete("n1", 2, "was in the tail"), delete("o1", 2, "the last write")))
    await p.close()
    reader = MemoriesReader(tmp_path)
    assert reader.count() == 6 and reader.get("n1")["is_deleted"] and not reader.get("n0")["is_deleted"]
    assert digest != await MemoriesProjector(tmp_path, embedder).digest()


async def test_an_unread_table_replaces_changed_rows_to_the_same_digest(store, tmp_path: Path, embedder,
                                                                         monkeypatch) -> None:
    """`unread` (an offline rebuild): a batch that changes stored rows deletes and appends them; the rows
    are those an upsert writes, batch after batch; a failure between the delete and the append is rolled
    back by the next apply (a retry in the same process, or the next writer), which folds the batch again."""
    from projections.core import lance

    first = await append(store, *(commit(f"m{i}", f"memory {i}") for i in range(6)))
    second = await append(store, delete("m1", 2, "gone"), commit("m6", "memory 6"), delete("m4", 2))
    third = await append(store, delete("m6", 2, "again"), commit("m7", "memory 7"))
    upsert, unread = MemoriesProjector(tmp_path / "upsert", embedder), \
        MemoriesProjector(tmp_path / "unread", embedder, unread=True)
    for batch in (first, second, third):
        await upsert.apply(batch)
        await unread.apply(batch)
        assert await unread.digest() == await upsert.digest()
    assert MemoriesReader(tmp_path / "unread").count() == 5

    crashing = MemoriesProjector(tmp_path / "crash", embedder, unread=True)
    await crashing.apply(first)

    async def no_append(self, data, *, upsert):   # the delete is committed, then the process dies
        raise OSError("simulated crash before the append")

    monkeypatch.setattr(lance.LanceTable, "write", no_append)
    with pytest.raises(OSError):
        await crashing.apply(second)
    monkeypatch.undo()
    assert MemoriesReader(tmp_path / "crash").count() == 4   # the latest version lacks m1 and m4 ...
    await crashing.apply(second)   # ... a retry rolls back to the checkpoint's version first
    await crashing.apply(third)
    assert await crashing.digest() == await upsert.digest()
    with pytest.raises(OSError):
        monkeypatch.setattr(lance.LanceTable, "write", no_append)
        await crashing.apply(await append(store, delete("m7", 2), commit("m8", "memory 8")))
    await crashing.close()
    monkeypatch.undo()
    again = MemoriesProjector(tmp_path / "crash", embedder, unread=True)   # a restart: the next writer
    await again.apply(await append(store, delete("m0", 2)))
    assert {m: MemoriesReader(tmp_path / "crash").get(m)["is_deleted"] for m in ("m0", "m2", "m7")} == \
        {"m0": True, "m2": False, "m7": False}
    for p in (upsert, unread, again):
        await p.close()


async def test_maintain_compacts_without_changing_the_digest(store, tmp_path: Path, embedder) -> None:
    p = MemoriesProjector(tmp_path, embedder, compact_after_writes=0)
    for i in range(20):
        await p.apply(await append(store, commit(f"m{i}", f"memory number {i}")))
    table = await p._table.open()
    before = (await table.stats())["fragment_stats"]["num_fragments"]
    digest = await p.digest()
    await p.maintain()
    after = (await table.stats())["fragment_stats"]["num_fragments"]
    assert before >= 20 and after < before
    assert await p.digest() == digest
    ck = await p.load_checkpoint()
    await p.apply(await append(store, commit("late", "after maintain")))
    assert await p.load_checkpoint() != ck
    await p.close()


async def test_vector_index_is_built_at_the_threshold_and_fresh_rows_stay_searchable(
        store, tmp_path: Path, embedder) -> None:
    p = MemoriesProjector(tmp_path, embedder, compact_after_writes=0, compact_after_rows=0, vector_index_min_rows=200)

    async def vector_indexed() -> bool:
        return any(list(ix.columns) == ["vector"] for ix in await (await p._table.open()).list_indices())

    await p.apply(await append(store, *[commit(f"m{i}", f"memory number {i}") for i in range(150)]))
    await p.maintain()
    assert not await vector_indexed()  # below the threshold: exhaustive search only
    await p.apply(await append(store, *[commit(f"m{i}", f"memory number {i}") for i in range(150, 260)]))
    digest = await p.digest()
    await p.maintain()
    assert await vector_indexed() and await p.digest() == digest
    await p.apply(await append(store, commit("late", "written after the index was built", ns="bob-main")))
    reader = MemoriesReader(tmp_path)
    hits = await reader.adense(embedder.vector("written after the index was built"), ["bob-main", "shared"], 5)
    assert hits[0][0] == "late" and hits[0][1] == pytest.approx(1.0, abs=1e-3)
    near = await reader.adense(embedder.vector("memory number 7"), ["shared"], 3)
    assert near[0][0] == "m7" and [mid for mid, _ in near] == [h["id"] for h in reader.search(
        embedder.vector("memory number 7"), ["shared"], 3)]
    reader.close()
    await p.close()


async def test_auto_compaction_after_many_small_writes(store, tmp_path: Path, embedder) -> None:
    p = MemoriesProjector(tmp_path, embedder, compact_after_writes=10)
    for i in range(25):
        await p.apply(await append(store, commit(f"m{i}", f"memory {i}")))
    table = await p._table.open()
    assert (await table.stats())["fragment_stats"]["num_fragments"] <= 8
    await p.close()


async def test_a_projection_built_with_another_model_requires_a_rebuild(store, tmp_path: Path) -> None:
    evs = await append(store, commit("a", "alpha"))
    p = MemoriesProjector(tmp_path, HashEmbedder(dim=16, model_id="model-a"))
    await p.apply(evs)
    await p.close()
    other = MemoriesProjector(tmp_path, HashEmbedder(dim=16, model_id="model-b"))
    with pytest.raises(RebuildRequired):
        await other.load_checkpoint()
    with pytest.raises(RebuildRequired):
        await other.apply(await append(store, commit("b", "beta")))
    await other.close()


async def test_a_second_writer_on_the_same_directory_is_refused(store, tmp_path: Path, embedder) -> None:
    evs = await append(store, commit("a", "alpha"), commit("b", "beta"))
    first, second = MemoriesProjector(tmp_path, embedder), MemoriesProjector(tmp_path, embedder)
    await first.apply(evs[:1])
    with pytest.raises(ProjectionBusy):
        await second.apply(evs)
    await first.close()
    await second.apply(evs)
    assert await second.load_checkpoint() == evs[-1].position
    await second.close()


async def test_one_embed_call_per_batch_and_prepare_is_reused(store, tmp_path: Path, embedder) -> None:
    evs = await append(store, *[commit(f"m{i}", f"text {i % 5}") for i in range(12)])
    p = MemoriesProjector(tmp_path, embedder)
    await p.apply(evs[:6])
    assert (embedder.calls, embedder.texts) == (1, 5)  # duplicates embedded once
    await p.prepare(evs[6:])
    calls = embedder.calls
    await p.apply(evs[6:])
    assert embedder.calls == calls  # the prepared vectors were used
    await p.close()
    raw = orjson.loads((tmp_path / "checkpoint.json").read_bytes())
    assert raw["meta"] == {"model": embedder.model_id, "dim": 16, "schema": SCHEMA_VERSION}


async def test_a_table_behind_its_checkpoint_is_refused(store, tmp_path: Path, embedder) -> None:
    p = MemoriesProjector(tmp_path, embedder)
    await p.apply(await append(store, commit("a", "alpha")))
    await p.close()
    ck = checkpoint_file.load(tmp_path)
    checkpoint_file.save(tmp_path, Checkpoint(ck.projector, ck.position, ck.table_version + 5, ck.meta))
    with pytest.raises(RebuildRequired, match="behind its checkpoint"):
        await MemoriesProjector(tmp_path, embedder).load_checkpoint()
