"""Retention of backup archives (gateway.cli.backup_retention, `zhiyi backup --prune`): 7 daily + 4
weekly, the newest always, and an incremental's whole chain; the command deletes the rest."""

from __future__ import annotations

import io
import tarfile
from datetime import datetime, timedelta, timezone

import orjson

from gateway.cli.backup_retention import Kept, keep
from gateway.cli.backup_prune import prune as _prune

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=timezone.utc)


def test_daily_and_weekly_keep_the_newest_of_each() -> None:
    daily = [Kept(f"d{i}-{h}", NOW - timedelta(days=i, hours=h)) for i in range(40) for h in (1, 5)]
    kept = keep(daily, NOW)
    assert {f"d{i}-1" for i in range(7)} <= kept                 # the newest of each of the last 7 days
    assert not {f"d{i}-5" for i in range(7)} & kept               # not the older ones of those days
    older = {k for k in kept if int(k[1:].split("-")[0]) >= 7}
    assert 1 <= len(older) <= 4                                   # the newest of each earlier week of the 4
    assert len(kept) <= 11 and "d39-1" not in kept


def test_an_incrementals_chain_is_kept_and_the_newest_always() -> None:
    old = NOW - timedelta(days=60)
    chain = [Kept("full", old), Kept("incr-1", old + timedelta(hours=1), "full"),
             Kept("incr-2", NOW - timedelta(hours=1), "incr-1")]
    assert keep(chain, NOW) == {"full", "incr-1", "incr-2"}
    assert keep([Kept("ancient", old)], NOW) == {"ancient"}      # the newest, however old
    assert keep([], NOW) == set()


def _archive(directory, backup_id: str, created: datetime, base: str = "") -> None:
    manifest = orjson.dumps({"backup_id": backup_id, "position": "1-0", "base": base,
                             "created_at": created.isoformat().replace("+00:00", "Z")})
    with tarfile.open(directory / f"zhiyi-{backup_id}.tar", "w") as tar:
        info = tarfile.TarInfo("manifest.json")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))


def test_prune_deletes_what_is_not_kept(tmp_path, capsys) -> None:
    now = datetime.now(timezone.utc)
    for i in range(10):
        _archive(tmp_path, f"b{i:02d}", now - timedelta(days=i * 9))
    assert _prune(tmp_path, True) == 0          # what `zhiyi backup --prune --to DIR --json` runs
    result = orjson.loads(capsys.readouterr().out)
    left = sorted(p.name for p in tmp_path.glob("zhiyi-*.tar"))
    assert left == [f"zhiyi-{k}.tar" for k in result["kept"]] and "b00" in result["kept"]
    assert result["deleted"] and len(left) + len(result["deleted"]) == 10


def test_prune_uses_zhiyi_backup_dir(tmp_path, capsys) -> None:
    from gateway.cli.backup import cmd_backup
    from gateway.cli.main import parser
    from gateway.process.settings import Environment

    env = Environment.read({"ZHIYI_BACKUP_DIR": str(tmp_path)})
    assert env.backup_dir == str(tmp_path)
    _archive(tmp_path, "only", datetime.now(timezone.utc))
    args = parser(env).parse_args(["backup", "--prune", "--json", "--data-dir", str(tmp_path / "d")])
    args.env = env
    assert cmd_backup(args) == 0
    assert orjson.loads(capsys.readouterr().out)["kept"] == ["only"] and (tmp_path / "zhiyi-only.tar").exists()
