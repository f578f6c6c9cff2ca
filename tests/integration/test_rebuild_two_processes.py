"""Rebuilds read each batch once for every projector, and fold on two cores (a second process) to
the same digests; a failure in either process fails the rebuild with the error itself."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from events.errors import LogResetError
from gateway.process.log_reader import log_reader
from projections.core.rebuild_process import SecondProcess
from projections.core.registry import NAMES
from projections.core.replay import live_digests, rebuild, verify
from tests.hash_embedder import HashEmbedder
from tests.integration.test_projection_replay import build_live, commit, delete


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder(dim=16)


async def _log(store) -> None:
    await store.append([commit(i, "shared" if i % 2 else "alice-main") for i in range(20)])
    await store.append([delete(3), delete(4, "alice-main")])
    await store.append([commit(i) for i in range(20, 25)])


async def _xranges(redis) -> int:
    return int((await redis.info("commandstats")).get("cmdstat_xrange", {}).get("calls", 0))


async def test_every_projector_shares_one_read_of_each_batch(store, redis, tmp_path: Path, embedder) -> None:
    await _log(store)
    await build_live(store, tmp_path / "live", embedder, batch_size=4)
    live = await live_digests(tmp_path / "live", embedder)
    await redis.config_resetstat()
    rebuilt = await rebuild(store, tmp_path / "rebuilt", embedder, batch_size=4)
    reads = 27 // 4 + 2   # 7 batches and the empty answer that ends the fold
    # one XRANGE per read, and one more checking the checkpoint's event is still in the log (after the first)
    assert await _xranges(redis) == 2 * reads - 1
    assert {n: (d.digest, d.position) for n, d in rebuilt.items()} == {n: (d.digest, d.position)
                                                                       for n, d in live.items()}
    assert list(rebuilt) == list(NAMES)


async def test_a_second_process_folds_to_the_same_digests(store, redis_url, tmp_path: Path, embedder) -> None:
    await _log(store)
    here = await rebuild(store, tmp_path / "one", embedder, batch_size=4)
    two = await rebuild(store, tmp_path / "two", embedder, batch_size=4, second=SecondProcess(partial(log_reader, redis_url), min_events=0))
    assert list(two) == list(NAMES)
    assert {n: (d.digest, d.position, d.events) for n, d in two.items()} == {
        n: (d.digest, d.position, d.events) for n, d in here.items()}
    # verify's rebuilds (to each live projection's own position) on two cores agree with the live folds
    await build_live(store, tmp_path / "live", embedder, batch_size=5)
    report = await verify(store, tmp_path / "live", tmp_path / "scratch", embedder,
                          second=SecondProcess(partial(log_reader, redis_url), min_events=0))
    assert report.ok, report.mismatches


async def test_a_short_log_stays_in_one_process(store, redis_url, tmp_path: Path, embedder) -> None:
    await _log(store)
    # a log URL nobody listens on: folding there would fail, so passing shows it was never used
    got = await rebuild(store, tmp_path / "r", embedder, second=SecondProcess(partial(log_reader, "redis://127.0.0.1:1/0"), min_events=28))
    assert got["graph"].events == 27


async def test_the_second_process_error_fails_the_rebuild(store, redis_url, tmp_path: Path, embedder) -> None:
    await _log(store)
    await store.open_epoch(create=True)
    other_db = redis_url.rsplit("/", 1)[0] + "/5"   # the same server, a database without this log
    with pytest.raises(LogResetError):
        await rebuild(store, tmp_path / "r", embedder, second=SecondProcess(partial(log_reader, other_db), min_events=0))
