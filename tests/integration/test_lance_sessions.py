"""Long-lived LanceDB connections keep bounded caches (projections.core.lance_session): the serving
index opens a new table version at every refresh, and a default session keeps every version's index
and metadata entries (the gateway that followed an ingest to 1M memories held 1.6 GB more than one
loaded fresh)."""

from __future__ import annotations

from pathlib import Path

from projections.core.lance_session import DELTA_READS, SEARCH_READS, CacheBounds
from projections.memories.reader import MemoriesReader
from projections.serving.index import ServingIndex
from projections.serving.table_at import TableAt
from tests.hash_embedder import HashEmbedder
from tests.integration.test_serving_index import commit, project

SMALL = CacheBounds(index_bytes=64 << 10, metadata_bytes=64 << 10)


async def test_following_many_versions_keeps_the_delta_readers_caches_bounded(store, tmp_path: Path) -> None:
    emb = HashEmbedder(dim=16)
    await store.append([commit(f"a{i}", f"first note {i}", "alice-main") for i in range(20)])
    await project(store, tmp_path, emb)
    index, unbounded = ServingIndex(tmp_path), ServingIndex(tmp_path)
    index._table = TableAt(tmp_path, SMALL)
    unbounded._table = TableAt(tmp_path, CacheBounds(index_bytes=1 << 30, metadata_bytes=1 << 30))
    assert await index.wait_ready() and await unbounded.wait_ready()
    for round_ in range(40):   # a version each, followed by both
        await store.append([commit(f"r{round_}", f"note of round {round_}", "alice-main")])
        await project(store, tmp_path, emb)
        assert await index.refresh() and await unbounded.refresh()
    assert len(await index.alexical("round", ["alice-main"], 100)) == 40
    held, grown = index._table.session.size_bytes, unbounded._table.session.size_bytes
    assert grown > 2 * (SMALL.index_bytes + SMALL.metadata_bytes)   # what 40 versions hold when let
    bound = SMALL.index_bytes + SMALL.metadata_bytes
    assert bound / 4 < held <= 1.5 * bound, (held, grown)   # the connection's session (an unused one holds ~150 B), bounded
    await index.close()
    await unbounded.close()


async def test_a_reader_of_the_latest_version_keeps_its_caches_bounded(store, tmp_path: Path) -> None:
    emb = HashEmbedder(dim=16)
    reader = MemoriesReader(tmp_path, SMALL)   # read_consistency_interval 0: every read checks for a new version
    for round_ in range(40):
        await store.append([commit(f"r{round_}", f"note of round {round_}", "alice-main")])
        await project(store, tmp_path, emb)
        assert len(await reader.adense(emb.vector("note of round 1"), ["alice-main"], 100)) == round_ + 1
    bound = SMALL.index_bytes + SMALL.metadata_bytes
    assert bound / 4 < reader.session.size_bytes <= 1.5 * bound
    reader.close()
    assert DELTA_READS.index_bytes < SEARCH_READS.index_bytes   # the delta reader never searches vectors
