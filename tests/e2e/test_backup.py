"""`zhiyi backup` / `zhiyi restore` (issue 18, part 1): an archive taken while commits go on restores,
into a fresh Redis and data dir, exactly the log up to its position and the projections a rebuild of
that log gives; an incremental archive restores through its base; a corrupt chunk is named and
nothing is loaded; a Redis that holds a log is refused. Every Redis here is one the test starts."""

from __future__ import annotations

import asyncio
import contextlib
import io
import shutil
import tarfile
import time
from pathlib import Path

import orjson
import pytest
import redis as sync_redis

from gateway.cli.main import main
from projections.models.embedding_cache import EmbeddingCache
from tests.redis_process import RestartableRedis

STREAM = "zhiyi:events"


@pytest.fixture
def redis_url(tmp_path):
    """The source log's Redis (the `api` fixture's): started here, not the session's."""
    server = RestartableRedis(tmp_path / "source-redis").start()
    yield server.url
    server.stop()


@pytest.fixture
def fresh_redis(tmp_path):
    started: list[RestartableRedis] = []

    def start(name: str) -> RestartableRedis:
        started.append(RestartableRedis(tmp_path / name).start())
        return started[-1]

    yield start
    for server in started:
        server.stop()


async def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            return main(list(argv))

    rc = await asyncio.to_thread(run)
    return rc, out.getvalue(), err.getvalue()


def _log(client: sync_redis.Redis, until: str = "+") -> list[tuple[bytes, list[tuple[bytes, bytes]]]]:
    return [(pos, list(fields.items())) for pos, fields in client.xrange(STREAM, "-", until)]


def _digests(out: str) -> dict[str, tuple[str, str]]:
    return {p["projection"]: (p["digest"], p["position"]) for p in orjson.loads(out)["projections"]}


def _corrupt_copy(archive: Path, member_name: str, directory: Path) -> Path:
    """A copy of `archive` in `directory` with one byte flipped in the middle of one member."""
    directory.mkdir()
    bad = directory / archive.name
    shutil.copy(archive, bad)
    with tarfile.open(bad) as tar:
        member = tar.getmember(member_name)
    with open(bad, "r+b") as fh:
        fh.seek(member.offset_data + member.size // 2)
        byte = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([byte[0] ^ 0xFF]))
    return bad


async def _commit_some(api, key: str, n: int, prefix: str) -> None:
    for i in range(n):
        status, body = await api.commit(key, f"{prefix} {i}: the nightly job {i} writes report {i * 7} to disk {i % 3}")
        assert status in (200, 201), body


async def _backup_of_some(api, common: list[str], agent: str, n: int) -> tuple[str, dict]:
    """`agent` registered, n of its notes committed and projected, then `zhiyi backup`: (its key, the
    backup's JSON line)."""
    key = await api.register(agent)
    await _commit_some(api, key, n, f"{agent}'s note")
    await api.settle()
    rc, out, err = await _cli("backup", *common, "--json")
    assert rc == 0, err
    return key, orjson.loads(out)


async def _backup_while_committing(api, key: str, argv: list[str]) -> tuple[dict, int, float]:
    """Run a backup while a task keeps committing; (its JSON line, commits made meanwhile, seconds)."""
    stop = asyncio.Event()
    made = 0

    async def keep_committing() -> None:
        nonlocal made
        while not stop.is_set():
            status, body = await api.commit(key, f"concurrent memory {made}: disk {made % 5} is {made}% full")
            assert status in (200, 201), body
            made += 1

    task = asyncio.create_task(keep_committing())
    while made < 3:
        await asyncio.sleep(0.02)
    t0 = time.monotonic()
    rc, out, err = await _cli("backup", *argv, "--json")
    seconds = time.monotonic() - t0
    during = made
    while made < during + 3:   # the log goes on past the backup's position
        await asyncio.sleep(0.02)
    stop.set()
    await task
    assert rc == 0, err
    return orjson.loads(out), made, seconds


async def test_backup_while_committing_then_full_and_incremental_restores(api, redis_url, fresh_redis, tmp_path):
    source = sync_redis.Redis.from_url(redis_url)
    common = ["--data-dir", str(tmp_path / "data"), "--redis-url", redis_url]
    backups = tmp_path / "backups"
    key = await api.register("alice")
    await _commit_some(api, key, 12, "first batch")
    await api.settle()
    rc, _, err = await _cli("replay", *common, "--into", str(tmp_path / "warm"))  # fills the data dir's embedding cache
    assert rc == 0, err
    cache = tmp_path / "data" / "cache" / "embeddings.sqlite"
    assert cache.exists()

    # (a) a full backup while commits go on
    full, made, full_s = await _backup_while_committing(api, key, [*common, "--to", str(backups)])
    p1 = full["position"]
    assert full["kind"] == "full" and made >= 6
    await api.settle()
    assert source.xrange(STREAM, f"({p1}", "+", count=1), "commits went on after the backup's position"
    path = Path(full["path"])
    assert path.parent == backups and path.name == f"{full['backup_id']}.tar" and path.name.endswith(f"-full-{p1}.tar")
    assert full["bytes"] == path.stat().st_size and full["events"] == len(_log(source, p1))
    with tarfile.open(path) as tar:
        names = tar.getnames()
        manifest = orjson.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
    assert {"manifest.json", "log/000001.jsonl.gz", "embeddings.sqlite", "projections/memories/checkpoint.json",
            "projections/graph/graph.db"} <= set(names), names
    assert manifest["position"] == p1 and manifest["from_position"] == "" and manifest["base"] is None
    assert manifest["chunks"][0]["last"] == p1 and manifest["epoch"] and manifest["hlc"]
    copies = {c["name"]: c for c in manifest["projections"]}     # copies of the live projections, as checkpointed
    assert copies["memories"]["kind"] == "lance" and copies["graph"]["kind"] == "sqlite"
    assert all(c["position"] is None or c["position"] <= p1 for c in copies.values())
    assert {f["name"] for f in manifest["files"]} >= {"embeddings.sqlite", "projections/memories/checkpoint.json"}

    target1 = fresh_redis("restore-1")
    t0 = time.monotonic()
    rc, out, err = await _cli("restore", str(path), "--data-dir", str(tmp_path / "r1"),
                              "--redis-url", target1.url, "--json")
    restore_s = time.monotonic() - t0
    assert rc == 0, err
    restored = orjson.loads(out)
    assert restored["position"] == p1 and restored["events"] == full["events"] and restored["embeddings_restored"]
    assert restored["projections_from_archive"] and restored["rebuilt_because"] is None
    folded = {row["projection"]: row["events"] for row in restored["projections"]}
    assert folded["memories"] < full["events"]      # folded on from the copy, not from the start
    t1 = target1.client()
    assert _log(t1) == _log(source, p1)          # original ids, raw fields, in order
    assert t1.get("zhiyi:epoch") == source.get("zhiyi:epoch")
    assert t1.hgetall("zhiyi:agent-keys") == source.hgetall("zhiyi:agent-keys")   # write-side indexes rebuilt
    group, = t1.xinfo_groups(STREAM)            # the reactions already run on the source are not run again
    assert group["name"] == b"reactions" and group["last-delivered-id"] == manifest["reactions"].encode()
    rc, out, err = await _cli("replay", *common, "--into", str(tmp_path / "until-p1"), "--until", p1, "--json")
    assert rc == 0, err
    assert _digests(out) == _digests(orjson.dumps(restored).decode())
    rc, out, err = await _cli("digest", "--data-dir", str(tmp_path / "r1"), "--redis-url", target1.url, "--json")
    assert rc == 0 and _digests(out) == _digests(orjson.dumps(restored).decode()), err
    with EmbeddingCache(tmp_path / "r1" / "cache" / "embeddings.sqlite") as restored_cache:   # either format
        assert restored_cache.count() > 0

    # (b) an incremental backup after more commits restores through its base to its own position
    await _commit_some(api, key, 5, "second batch")
    incr, _, incr_s = await _backup_while_committing(api, key, [*common, "--to", str(backups), "--incremental"])
    p2 = incr["position"]
    assert incr["kind"] == "incremental" and Path(incr["path"]).name.endswith(f"-incr-{p2}.tar")
    assert incr["events"] == len(_log(source, p2)) - len(_log(source, p1))
    with tarfile.open(incr["path"]) as tar:
        m2 = orjson.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        assert "embeddings.sqlite" not in tar.getnames()
    assert m2["base"] == full["backup_id"] and m2["from_position"] == p1
    target2 = fresh_redis("restore-2")
    rc, out, err = await _cli("restore", incr["path"], "--data-dir", str(tmp_path / "r2"),
                              "--redis-url", target2.url, "--json")
    assert rc == 0, err
    restored2 = orjson.loads(out)
    assert restored2["chain"] == [full["backup_id"], incr["backup_id"]] and restored2["position"] == p2
    assert restored2["projections_from_archive"]    # the full one's copies, folded on over both logs
    assert _log(target2.client()) == _log(source, p2)
    rc, out, err = await _cli("replay", *common, "--into", str(tmp_path / "until-p2"), "--until", p2, "--json")
    assert rc == 0 and _digests(out) == _digests(orjson.dumps(restored2).decode()), err
    print(f"\nbackup: full {full['events']} events {full['bytes']} bytes in {full_s:.2f} s; incremental "
          f"{incr['events']} events {incr['bytes']} bytes in {incr_s:.2f} s; restore of the full one "
          f"{restore_s:.2f} s")


async def test_corrupt_chunk_is_named_and_a_non_empty_redis_refused(api, redis_url, fresh_redis, tmp_path):
    source = sync_redis.Redis.from_url(redis_url)
    common = ["--data-dir", str(tmp_path / "data"), "--redis-url", redis_url]
    _, made = await _backup_of_some(api, common, "bob", 4)
    good = Path(made["path"])
    assert good.parent == tmp_path / "data" / "backups"

    # (c) one byte flipped inside a chunk's tar member: detected, named, exit 2, nothing loaded
    bad = _corrupt_copy(good, "log/000001.jsonl.gz", tmp_path / "corrupt")
    target = fresh_redis("restore-corrupt")
    rc, out, err = await _cli("restore", str(bad), "--data-dir", str(tmp_path / "rc"), "--redis-url", target.url)
    assert rc == 2
    assert bad.name in err and "log/000001.jsonl.gz" in err and "corrupt" in err
    assert target.client().xlen(STREAM) == 0 and target.client().get("zhiyi:epoch") is None
    assert not (tmp_path / "rc" / "projections").exists()

    # (d) a Redis that holds a log is refused without --force (and left as it was)
    before = _log(source)
    rc, out, err = await _cli("restore", str(good), "--data-dir", str(tmp_path / "rd"), "--redis-url", redis_url)
    assert rc == 2 and "already holds a log" in err
    assert _log(source) == before

    # an incremental with no archive in the directory: refused
    rc, out, err = await _cli("backup", *common, "--to", str(tmp_path / "none"), "--incremental")
    assert rc == 2 and "no archive" in err


async def test_restore_force_rebuild_and_a_corrupt_projection_copy(api, redis_url, fresh_redis, tmp_path):
    """`--rebuild` gives the digests the archived copies give; `--force` replaces a Redis's log and
    keeps the data dir's projections aside; a corrupt projection file is named, nothing loaded."""
    source = sync_redis.Redis.from_url(redis_url)
    common = ["--data-dir", str(tmp_path / "data"), "--redis-url", redis_url]
    key, first = await _backup_of_some(api, common, "carol", 5)

    target = fresh_redis("restore-a")
    rc, out, err = await _cli("restore", first["path"], "--data-dir", str(tmp_path / "ra"), "--redis-url", target.url,
                              "--json")
    assert rc == 0, err
    archived = orjson.loads(out)
    assert archived["projections_from_archive"]
    rebuilt_redis = fresh_redis("restore-b")
    rc, out, err = await _cli("restore", first["path"], "--rebuild", "--data-dir", str(tmp_path / "rb"),
                              "--redis-url", rebuilt_redis.url, "--json")
    assert rc == 0, err
    rebuilt = orjson.loads(out)
    assert not rebuilt["projections_from_archive"] and rebuilt["rebuilt_because"] == "--rebuild"
    assert _digests(out) == _digests(orjson.dumps(archived).decode())
    assert {r["projection"]: r["events"] for r in rebuilt["projections"]}["metrics"] == first["events"]

    # --force: the target Redis holds a log and the data dir projections; a newer archive replaces both
    await _commit_some(api, key, 3, "carol's later note")
    await api.settle()
    rc, out, err = await _cli("backup", *common, "--json")
    assert rc == 0, err
    second = orjson.loads(out)
    rc, _, err = await _cli("restore", second["path"], "--data-dir", str(tmp_path / "ra"), "--redis-url", target.url)
    assert rc == 2 and "holds projections" in err
    rc, out, err = await _cli("restore", second["path"], "--force", "--data-dir", str(tmp_path / "ra"),
                              "--redis-url", target.url, "--json")
    assert rc == 0, err
    forced = orjson.loads(out)
    assert forced["position"] == second["position"] and _log(target.client()) == _log(source, second["position"])
    kept = list((tmp_path / "ra").glob("projections.before-restore-*"))
    assert len(kept) == 1 and (kept[0] / "memories" / "checkpoint.json").exists()
    rc, out, err = await _cli("replay", *common, "--into", str(tmp_path / "until-second"), "--until",
                              second["position"], "--json")
    assert rc == 0 and _digests(out) == _digests(orjson.dumps(forced).decode()), err

    # a byte flipped in a projection file: named, exit 2, nothing loaded
    bad = _corrupt_copy(Path(first["path"]), "projections/graph/graph.db", tmp_path / "corrupt")
    empty = fresh_redis("restore-c")
    rc, _, err = await _cli("restore", str(bad), "--data-dir", str(tmp_path / "rc"), "--redis-url", empty.url)
    assert rc == 2 and "projections/graph/graph.db" in err and "corrupt" in err, err
    assert empty.client().xlen(STREAM) == 0
