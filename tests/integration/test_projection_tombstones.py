"""The tombstones projector against a real Redis log and a real LanceDB table in tmp_path: one row per
forgotten memory (the first event wins), effectively-once under redelivery and crashes, the same
digest however the log is folded; and its reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from events.catalogue import MemoryCommitted, MemoryForgotten, RecallServed, new_event
from events.envelope import Event
from events.hlc import HLC, iso_from_ms
from projections.core import checkpoint as checkpoint_file
from projections.core.checkpoint import Checkpoint
from projections.core.errors import InvalidQuery, RebuildRequired
from projections.tombstones.reader import TombstonesReader
from projections.core.runner import ProjectionRunner
from projections.tombstones.projector import TombstonesProjector, tombstone_id


def forgot(mid: str, reason: str = "deprecated", ns: str = "alice-main", content: str = "", merged_into: str = "",
           version: int = 3) -> Event:
    return new_event(MemoryForgotten(mid, ns, version, reason, content or f"content of {mid}", merged_into),
                     ns=ns, agent="system", by="admin")


def commit(mid: str, ns: str = "alice-main") -> Event:
    return new_event(MemoryCommitted(mid, f"content of {mid}", ns, "fact", "system_fact"), ns=ns, agent="alice")


async def append(store, *events: Event) -> list[Event]:
    res = await store.append(list(events))
    return [await store.get(p) for p in res.positions]


class CrashBeforeCheckpoint(TombstonesProjector):
    """Writes its rows, then 'crashes' once instead of writing the checkpoint."""

    crashes = 1

    async def _save_checkpoint(self, ck: Checkpoint) -> None:
        if self.crashes and self._ck is not None:
            self.crashes -= 1
            raise OSError("simulated crash between the rows and the checkpoint")
        await super()._save_checkpoint(ck)


async def test_forgotten_events_fold_into_one_row_each(store, tmp_path: Path) -> None:
    evs = await append(store, commit("m1"), forgot("m1", "deprecated", content="old VPN note"),
                       new_event(RecallServed("q", ("shared",), ("m2",), (0.5,)), ns="shared", agent="a"),
                       forgot("m2", "merged", ns="shared", merged_into="m9"), forgot("m3", "lru"))
    p = TombstonesProjector(tmp_path)
    await p.apply(evs)
    assert await p.load_checkpoint() == evs[-1].position

    reader = TombstonesReader(tmp_path)
    rows = await reader.list(None, None, None, 100, 0)
    by_mem = {r["original_id"]: r for r in rows}
    assert set(by_mem) == {"m1", "m2", "m3"} and await reader.count() == 3
    m1 = by_mem["m1"]
    assert m1 == {"id": tombstone_id("m1"), "original_id": "m1", "content_snapshot": "old VPN note",
                  "namespace": "alice-main", "reason": "deprecated", "merged_into": "", "version": 3,
                  "deleted_at": iso_from_ms(HLC.parse(evs[1].hlc).wall_ms), "position": evs[1].position,
                  "restored_at": ""}
    assert by_mem["m2"]["merged_into"] == "m9" and by_mem["m2"]["namespace"] == "shared"
    # newest first (deleted_at desc, then id); filters combine
    assert [r["deleted_at"] for r in rows] == sorted((r["deleted_at"] for r in rows), reverse=True)
    assert [r["original_id"] for r in await reader.list(namespace="alice-main")] == \
        [r["original_id"] for r in rows if r["namespace"] == "alice-main"] and len(rows) == 3
    assert [r["original_id"] for r in await reader.list(reason="merged")] == ["m2"]
    assert await reader.list(namespace="alice-main", original_id="m2") == []
    assert await reader.count(reason="lru") == 1
    page = await reader.list(limit=2, offset=0) + await reader.list(limit=2, offset=2)
    assert [r["id"] for r in page] == [r["id"] for r in rows]
    assert await reader.list(offset=3) == []
    assert await reader.list(namespace="it's ' quoted") == []  # quoted, not injected
    with pytest.raises(InvalidQuery):
        await reader.list(reason="bored")
    with pytest.raises(InvalidQuery):
        await reader.list(limit=0)

    table = await p._table.open()
    assert any(ix.columns == ["id"] and ix.index_type == "BTree" for ix in await table.list_indices())
    assert await TombstonesReader(tmp_path / "missing").list() == []
    assert await TombstonesReader(tmp_path / "missing").count() == 0
    reader.close()
    await p.close()


async def test_the_first_forgotten_event_wins(store, tmp_path: Path) -> None:
    first = await append(store, forgot("m1", "quality_low", content="first"), forgot("m1", "lru", content="second"))
    later = await append(store, forgot("m1", "deprecated", content="third"), forgot("m2"))
    p = TombstonesProjector(tmp_path)
    await p.apply(first)  # two in one batch
    await p.apply(later)  # and one in a later batch
    reader = TombstonesReader(tmp_path)
    rows = await reader.list(original_id="m1")
    assert len(rows) == 1 and (rows[0]["reason"], rows[0]["content_snapshot"]) == ("quality_low", "first")
    assert rows[0]["position"] == first[0].position
    assert await reader.count() == 2
    reader.close()
    await p.close()


async def test_applying_a_batch_twice_changes_nothing(store, tmp_path: Path) -> None:
    evs = await append(store, forgot("a"), commit("b"), forgot("b", "lru"))
    p = TombstonesProjector(tmp_path)
    await p.apply(evs)
    first, version = await p.digest(), await p._table.version()
    await p.apply(evs)
    await p.apply(evs[1:])
    assert await p.digest() == first and await p._table.version() == version
    await p.close()
    again = TombstonesProjector(tmp_path)  # a new instance that re-reads the checkpoint
    await again.apply(evs)
    assert await again.digest() == first and await again._table.version() == version
    await again.close()
    # the checkpoint lost: a replay over the existing rows writes nothing
    (tmp_path / checkpoint_file.FILENAME).unlink()
    replayed = TombstonesProjector(tmp_path)
    await replayed.apply(evs)
    assert await replayed.digest() == first and await replayed._table.version() == version
    assert await replayed.load_checkpoint() == evs[-1].position
    await replayed.close()


async def test_a_crash_before_the_checkpoint_then_a_retry_by_the_same_writer(store, tmp_path: Path) -> None:
    """A restart after such a crash is the contract suite's (tests/integration/test_projector_contract.py);
    here the same writer retries the batch: its rows are already there, the checkpoint catches up."""
    batch1 = await append(store, forgot("a"), forgot("b"))
    batch2 = await append(store, forgot("c", "lru"), forgot("a", "lru"))
    crashy = CrashBeforeCheckpoint(tmp_path)
    await crashy.apply(batch1)
    before = await crashy.digest()
    with pytest.raises(OSError, match="simulated crash"):
        await crashy.apply(batch2)
    # the rows of batch 2 are in the table, the checkpoint still says batch 1
    assert await crashy.load_checkpoint() == batch1[-1].position
    assert await crashy.digest() == before
    await crashy.apply(batch2)  # retried by the same writer: the checkpoint catches up with its rows
    assert await crashy.load_checkpoint() == batch2[-1].position
    assert await crashy.digest() != before
    reader = TombstonesReader(tmp_path)
    assert await reader.count() == 3 and (await reader.list(original_id="a"))[0]["reason"] == "deprecated"
    reader.close()
    await crashy.close()


async def test_digest_is_stable_across_rebuilds_and_batching(store, tmp_path: Path) -> None:
    empty = await TombstonesProjector(tmp_path / "empty").digest()
    await store.append([commit(f"m{i}") for i in range(10)])
    await store.append([forgot(f"m{i}", ("lru", "deprecated")[i % 2], ns=("shared", "alice-main")[i % 2])
                        for i in range(0, 10, 2)])
    await store.append([forgot("m0", "quality_low"), forgot("m9", "merged", merged_into="m1")])
    digests = []
    for i, batch in enumerate((1, 3, 500)):
        p = TombstonesProjector(tmp_path / f"run{i}")
        await ProjectionRunner(store, p, publish=False, batch_size=batch).catch_up()
        await p.maintain()  # compaction keeps the digest
        digests.append(await p.digest())
        assert await p.load_checkpoint() == await store.last_position()
        await p.close()
    assert len(set(digests)) == 1 and digests[0] != empty


async def test_a_checkpoint_of_another_schema_version_needs_a_rebuild(store, tmp_path: Path) -> None:
    evs = await append(store, forgot("a"))
    p = TombstonesProjector(tmp_path)
    await p.apply(evs)
    await p.close()
    ck = checkpoint_file.load(tmp_path)
    assert ck is not None
    checkpoint_file.save(tmp_path, Checkpoint(ck.projector, ck.position, ck.table_version, {"schema": 0}))
    with pytest.raises(RebuildRequired):
        await TombstonesProjector(tmp_path).load_checkpoint()
