"""POST /api/v1/admin/backup and GET /api/v1/admin/backups (issue 18, part 1): the archive is written in
the background after a 202 that names its position, and restores (with `zhiyi restore`) to that
position; admin only; closed bodies; one backup at a time per directory; an incremental needs a base."""

from __future__ import annotations

import asyncio
import fcntl
import os
from pathlib import Path

import orjson

from tests.e2e.conftest import assert_error
from tests.e2e.test_backup import _cli, _digests, _log, fresh_redis, redis_url  # noqa: F401 - fixtures

import redis as sync_redis


async def _written(api, backup_id: str, timeout_s: float = 30.0) -> dict:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        status, body = await api.call("GET", "/api/v1/admin/backups")
        assert status == 200, body
        if body["running"] is None and body["last"] and body["last"]["backup_id"] == backup_id:
            return body
        assert asyncio.get_running_loop().time() < deadline, body
        await asyncio.sleep(0.05)


async def test_backup_endpoint_writes_an_archive_that_restores_to_its_position(api, redis_url, fresh_redis, tmp_path):
    key = await api.register("dora")
    for i in range(6):
        status, body = await api.commit(key, f"dora's note {i}: the build cache lives on disk {i}")
        assert status in (200, 201), body

    # admin only; the body is closed and typed; an incremental needs a base
    status, body = await api.call("POST", "/api/v1/admin/backup", key, json={})
    assert status == 403 and body["error"]["code"] == "admin_required"
    status, body = await api.call("POST", "/api/v1/admin/backup", json={"incremntal": True})
    assert status == 400 and body["error"]["code"] == "unknown_field", body
    status, body = await api.call("POST", "/api/v1/admin/backup", json={"incremental": "yes"})
    assert status == 400, body
    assert_error(body, "invalid_request")
    status, body = await api.call("POST", "/api/v1/admin/backup", json={"incremental": True})
    assert status == 422 and "needs a base" in body["error"]["message"], body

    await api.settle()
    status, started = await api.call("POST", "/api/v1/admin/backup")
    assert status == 202, started
    assert set(started) == {"backup_id", "kind", "position", "path"} and started["kind"] == "full"
    assert Path(started["path"]) == tmp_path / "data" / "backups" / f"{started['backup_id']}.tar"
    listing = await _written(api, started["backup_id"])
    assert listing["last"]["status"] == "written" and listing["last"]["position"] == started["position"]
    row, = listing["archives"]
    assert row["backup_id"] == started["backup_id"] and row["projections"] == 10 and row["events"] > 0
    assert Path(started["path"]).exists()

    # another backup being written into the directory (its lock held): 409, nothing written
    fd = os.open(tmp_path / "data" / "backups" / ".backup.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        status, body = await api.call("POST", "/api/v1/admin/backup", json={"incremental": True})
        assert status == 409, body
        assert_error(body, "backup_running")
    finally:
        os.close(fd)

    status, body = await api.commit(key, "dora's late note: the cache moved to the SSD")
    assert status == 201, body
    await api.settle()
    status, incr = await api.call("POST", "/api/v1/admin/backup", json={"incremental": True})
    assert status == 202 and incr["kind"] == "incremental", incr
    listing = await _written(api, incr["backup_id"])
    assert [a["backup_id"] for a in listing["archives"]] == [started["backup_id"], incr["backup_id"]]

    target = fresh_redis("restore-http")
    rc, out, err = await _cli("restore", incr["path"], "--data-dir", str(tmp_path / "restored"),
                              "--redis-url", target.url, "--json")
    assert rc == 0, err
    restored = orjson.loads(out)
    assert restored["position"] == incr["position"] and restored["projections_from_archive"]
    assert _log(target.client()) == _log(sync_redis.Redis.from_url(redis_url), incr["position"])
    rc, out, err = await _cli("replay", "--data-dir", str(tmp_path / "data"), "--redis-url", redis_url,
                              "--into", str(tmp_path / "until"), "--until", incr["position"], "--json")
    assert rc == 0 and _digests(out) == _digests(orjson.dumps(restored).decode()), err


async def test_a_backup_directory_that_cannot_be_written_is_said_plainly(api, tmp_path):
    key = await api.register("eve")
    status, body = await api.commit(key, "eve keeps her notes in the wiki")
    assert status == 201, body
    (tmp_path / "data" / "backups").write_text("not a directory")
    status, body = await api.call("POST", "/api/v1/admin/backup")
    assert status == 500, body
    assert_error(body, "internal_error")
    assert "backup directory cannot be written" in body["error"]["message"]
    assert body["error"]["details"]["directory"] == str(tmp_path / "data" / "backups")


async def test_a_backup_that_fails_in_the_background_says_so_and_leaves_no_archive(api, tmp_path):
    key = await api.register("fay")
    status, body = await api.commit(key, "fay's laptop is the blue one")
    assert status == 201, body
    cache = tmp_path / "data" / "cache" / "embeddings.sqlite"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(b"not a database " * 100)     # its copy fails once the archive is being written
    status, started = await api.call("POST", "/api/v1/admin/backup")
    assert status == 202, started
    listing = await _written(api, started["backup_id"])
    assert listing["last"]["status"] == "failed" and "not a database" in listing["last"]["error"], listing
    assert listing["archives"] == []
    directory = tmp_path / "data" / "backups"
    assert [p.name for p in directory.iterdir()] == [".backup.lock"]     # no archive, no temporary file
    assert not any(p.name.startswith(".backup-") for p in (tmp_path / "data").iterdir())   # copies removed
    status, body = await api.call("POST", "/api/v1/admin/backup")   # the directory is free again
    assert status == 202, body
