"""Replay: rebuilds match the live projection, time travel with `until`, verify."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from events.catalogue import MemoryCommitted, MemoryDeleted, new_event
from events.envelope import Event, UnknownPayload
from eventually import eventually
from projections.core.errors import RebuildTargetNotEmpty
from tests.hash_embedder import HashEmbedder
from projections.memories.projector import MemoriesProjector
from projections.core.registry import make_projectors, projection_dir
from projections.core.replay import live_digests, rebuild, verify
from projections.core.runner import ProjectionRunner


def commit(i: int, ns: str = "shared") -> Event:
    return new_event(MemoryCommitted(f"m{i}", f"memory {i} 记忆", ns, "fact", "system_fact", tags=(f"t{i % 3}",)),
                     ns=ns, agent=f"agent{i % 2}")


def delete(i: int, ns: str = "shared") -> Event:
    return new_event(MemoryDeleted(f"m{i}", ns, 2, "cleanup"), ns=ns, agent="agent0")


async def build_live(store, root: Path, embedder, *, batch_size: int = 3, until: str | None = None) -> None:
    for p in make_projectors(root, embedder):
        await ProjectionRunner(store, p, publish=False, batch_size=batch_size).catch_up(until)
        await p.close()


class IgnoresDeletes(MemoriesProjector):
    """A buggy fold (deletes are treated as unknown events), for checking that verify notices."""

    async def apply(self, events) -> None:
        await super().apply([replace(e, type="x.ignored", data=UnknownPayload({}))
                             if isinstance(e.data, MemoryDeleted) else e for e in events])


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder(dim=16)


async def test_rebuild_digest_equals_live_digest(store, tmp_path: Path, embedder) -> None:
    await store.append([commit(i, "shared" if i % 2 else "alice-main") for i in range(20)])
    await store.append([delete(3), delete(4, "alice-main")])
    await store.append([commit(i) for i in range(20, 25)])
    await build_live(store, tmp_path / "live", embedder, batch_size=4)
    live = await live_digests(tmp_path / "live", embedder)
    rebuilt = await rebuild(store, tmp_path / "rebuilt", embedder)
    assert rebuilt["memories"].digest == live["memories"].digest
    assert rebuilt["memories"].position == live["memories"].position == await store.last_position()
    assert rebuilt["memories"].events == 27 and live["memories"].events is None
    assert projection_dir(tmp_path / "rebuilt", "memories").is_dir()


async def test_rebuild_refuses_a_directory_with_projections(store, tmp_path: Path, embedder) -> None:
    await store.append([commit(1)])
    await rebuild(store, tmp_path / "r", embedder)
    with pytest.raises(RebuildTargetNotEmpty):
        await rebuild(store, tmp_path / "r", embedder)


async def test_until_travels_back_in_time(store, tmp_path: Path, embedder) -> None:
    early = await store.append([commit(i) for i in range(6)])
    middle = await store.append([delete(2), commit(6)])
    await store.append([delete(5), commit(7)])
    past = middle.positions[0]  # between the two events of one append

    await build_live(store, tmp_path / "live-past", embedder, until=past)
    live_past = await live_digests(tmp_path / "live-past", embedder)
    then = await rebuild(store, tmp_path / "then", embedder, until=past)
    now = await rebuild(store, tmp_path / "now", embedder)
    assert then["memories"].position == past and then["memories"].events == 7
    assert (then["memories"].digest, then["memories"].position) == \
        (live_past["memories"].digest, live_past["memories"].position)
    assert then["memories"].digest != now["memories"].digest
    start = await rebuild(store, tmp_path / "start", embedder, until=early.positions[-1])
    assert start["memories"].digest not in {then["memories"].digest, now["memories"].digest}


async def test_verify_agrees_with_an_honest_live_projection(store, tmp_path: Path, embedder) -> None:
    await store.append([commit(i) for i in range(12)])
    await store.append([delete(1), delete(7)])
    await build_live(store, tmp_path / "live", embedder, batch_size=5)
    report = await verify(store, tmp_path / "live", tmp_path / "scratch", embedder)
    assert report.ok and report.mismatches == []
    assert [r["memories"].digest for r in report.rebuilds] == [report.live["memories"].digest] * 2
    assert list((tmp_path / "scratch").iterdir()) == []  # scratch rebuilds are cleaned up


async def test_verify_catches_a_wrong_fold(store, tmp_path: Path, embedder) -> None:
    await store.append([commit(i) for i in range(5)])
    await store.append([delete(2)])
    wrong = IgnoresDeletes(projection_dir(tmp_path / "live", "memories"), embedder)
    await ProjectionRunner(store, wrong, publish=False).catch_up()
    await wrong.close()
    report = await verify(store, tmp_path / "live", tmp_path / "scratch", embedder)
    assert not report.ok and len(report.mismatches) == 2
    assert report.rebuilds[0]["memories"].digest == report.rebuilds[1]["memories"].digest


async def test_verify_while_the_live_projector_keeps_running(store, tmp_path: Path, embedder) -> None:
    await store.append([commit(i) for i in range(30)])
    live = make_projectors(tmp_path / "live", embedder)[0]
    stop = asyncio.Event()
    runner = asyncio.create_task(ProjectionRunner(store, live, batch_size=2, block_ms=20).run(stop))

    verified = asyncio.Event()
    written = [30]

    async def keep_writing() -> None:  # until verify has returned: the log moves all along
        while not verified.is_set():
            i = written[0]
            await store.append([commit(i)] + ([delete(i - 20)] if i % 4 == 0 else []))
            written[0] += 1
            await asyncio.sleep(0.005)

    writer = asyncio.create_task(keep_writing())
    await eventually(lambda: store.checkpoint("memories"), what="a first memories checkpoint")
    before = written[0]
    report = await verify(store, tmp_path / "live", tmp_path / "scratch", embedder)
    verified.set()
    await writer
    stop.set()
    await runner
    await live.close()
    assert report.ok, report.mismatches
    assert report.live["memories"].position is not None and written[0] > before


async def test_live_digests_of_an_empty_directory(tmp_path: Path, embedder) -> None:
    digests = await live_digests(tmp_path / "none", embedder)
    assert digests["memories"].position is None
    assert not (tmp_path / "none").exists()  # reading created nothing


async def test_an_offline_rebuild_gets_its_serving_indexes_from_the_first_live_maintain(store, tmp_path: Path) -> None:
    from events.catalogue import MemoryCommitted, new_event
    from tests.hash_embedder import HashEmbedder
    from projections.memories.projector import MemoriesProjector
    from projections.memories.reader import MemoriesReader
    from projections.core.replay import rebuild
    from projections.text.lexical import query_text

    await store.append([new_event(MemoryCommitted(f"m{i}", f"note {i} about 数据库 backups", "shared", "fact",
                                                  "system_fact"), ns="shared", agent="a") for i in range(5)])
    embedder = HashEmbedder(dim=16)
    await rebuild(store, tmp_path, embedder)
    memories = tmp_path / "projections" / "memories"
    import lancedb

    def indexed() -> set[str]:
        table = lancedb.connect(str(memories)).open_table("memories")
        return {ix.columns[0] for ix in table.list_indices()}

    assert indexed() == {"id"}  # offline: only the key index the fold itself needs
    live = MemoriesProjector(memories, embedder)
    await live.load_checkpoint()
    await live.maintain()
    await live.close()
    assert indexed() == {"id", "namespace", "is_deleted", "search_text"}
    reader = MemoriesReader(memories)
    assert len(await reader.alexical(query_text("数据库"), ["shared"], 5)) == 5
    reader.close()
