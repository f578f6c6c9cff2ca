"""Copies of the live projections for a backup (projections.core.snapshot): taken while a live writer
holds its lock and has committed rows after its checkpoint, each copy folded on from its checkpoint
(`fold_on`) gives the projections a rebuild gives; a LanceDB copy that cannot be read back at its
checkpointed version is left out ("missing") and folded from the start."""

from __future__ import annotations

from pathlib import Path

from events.catalogue import MemoryCommitted, MemoryFeedback, new_event
from projections.core import checkpoint as checkpoint_file
from projections.core.registry import make_projectors, projection_dir
from projections.core.replay import fold_on, rebuild
from projections.core.runner import ProjectionRunner
from projections.core.snapshot import EMPTY, LANCE, MISSING, SQLITE, take_snapshot
from projections.memories.projector import MemoriesProjector
from tests.hash_embedder import HashEmbedder


def commit(i: int) -> object:
    ns = "shared" if i % 2 else "alice-main"
    return new_event(MemoryCommitted(f"m{i}", f"memory {i} 记忆", ns, "fact", "system_fact"), ns=ns, agent="alice")


def vote(i: int) -> object:
    ns = "shared" if i % 2 else "alice-main"
    return new_event(MemoryFeedback(f"m{i}", ns, "useful"), ns=ns, agent="bob")


async def _digests(store, root: Path, embedder, until: str) -> dict[str, str]:
    return {name: d.digest for name, d in (await fold_on(store, root, embedder, until)).items()}


async def test_copies_taken_beside_a_live_writer_fold_on_to_a_rebuilds_digests(store, tmp_path: Path) -> None:
    embedder = HashEmbedder(dim=16)
    await store.append([commit(i) for i in range(12)] + [vote(i) for i in range(4)])
    live = make_projectors(tmp_path / "live", embedder)
    try:
        for p in live:
            await ProjectionRunner(store, p, publish=False, batch_size=5).catch_up()
        memories = next(p for p in live if isinstance(p, MemoriesProjector))
        checkpointed = await memories.load_checkpoint()
        # the live writer (it holds its lock) commits rows, then "crashes" before its checkpoint
        res = await store.append([commit(i) for i in range(12, 15)])
        more = [await store.get(p) for p in res.positions]

        async def crash(ck) -> None:
            raise OSError("simulated crash between the rows and the checkpoint")

        memories._save_checkpoint = crash  # type: ignore[method-assign]
        try:
            await memories.apply(more)
        except OSError:
            pass
        assert checkpoint_file.load(memories.directory).position == checkpointed

        copies = {c.name: c for c in await take_snapshot(tmp_path / "live", tmp_path / "copy")}
    finally:
        for p in live:
            await p.close()
    assert copies["memories"].kind == LANCE and copies["memories"].position == checkpointed
    assert copies["graph"].kind == SQLITE and copies["tombstones"].kind in (LANCE, EMPTY)
    assert not (projection_dir(tmp_path / "copy", "memories") / ".writer.lock").exists()

    await store.append([vote(i) for i in range(4, 8)])
    last = await store.last_position()
    folded = await fold_on(store, tmp_path / "copy", embedder, last)
    assert folded["memories"].events == 3 + 4      # the uncheckpointed commits folded again, once, and the votes
    assert {n: d.digest for n, d in folded.items()} == \
        {n: d.digest for n, d in (await rebuild(store, tmp_path / "rebuilt", embedder, last)).items()}


async def test_a_copy_unreadable_at_its_checkpoint_is_left_out_and_folded_from_the_start(store, tmp_path: Path) -> None:
    embedder = HashEmbedder(dim=16)
    await store.append([commit(i) for i in range(6)])
    for p in make_projectors(tmp_path / "live", embedder):
        await ProjectionRunner(store, p, publish=False).catch_up()
        await p.close()
    data_files = list((projection_dir(tmp_path / "live", "memories")).rglob("data/*.lance"))
    assert data_files
    for f in data_files:                 # as if pruned while being copied
        f.unlink()
    copies = {c.name: c for c in await take_snapshot(tmp_path / "live", tmp_path / "copy", attempts=2)}
    assert copies["memories"].kind == MISSING and copies["memories"].position is None
    assert not projection_dir(tmp_path / "copy", "memories").exists()
    last = await store.last_position()
    folded = await fold_on(store, tmp_path / "copy", embedder, last)
    assert folded["memories"].events == 6
    assert {n: d.digest for n, d in folded.items()} == \
        {n: d.digest for n, d in (await rebuild(store, tmp_path / "rebuilt", embedder, last)).items()}
