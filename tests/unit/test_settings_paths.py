"""Configured paths are made absolute once, at the settings boundary (a relative `--data-dir ./data`,
as `make up` passes it, answered 500 at the first recall), and the SQLite readers cope anyway."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gateway.cli.main import _absolute_paths, parser
from gateway.process.settings import Settings
from projections.core.sqlite_reader import SqliteReader
from projections.synonyms.reader import SynonymsReader


def test_settings_make_the_data_dir_and_ready_file_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = Settings(redis_url="redis://x", data_dir=Path("./data"), api_key="k", ready_file=Path("data/.ready"))
    assert s.data_dir == tmp_path / "data"
    assert s.ready_file == tmp_path / "data" / ".ready"
    assert s.embedding_cache_path == tmp_path / "data" / "cache" / "embeddings.sqlite"


def test_the_cli_resolves_every_path_option_against_the_start_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = parser().parse_args(["replay", "--data-dir", "./data", "--into", "../rebuilt"])
    _absolute_paths(args)
    assert args.data_dir == str(tmp_path / "data")
    assert args.into == str(tmp_path.parent / "rebuilt")
    args = parser().parse_args(["project", "--data-dir", "data", "--ready-file", "data/.ready"])
    _absolute_paths(args)
    assert (args.data_dir, args.ready_file) == (str(tmp_path / "data"), str(tmp_path / "data" / ".ready"))


def test_sqlite_readers_open_a_relative_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("proj").mkdir()
    with sqlite3.connect("proj/x.db") as conn:
        conn.execute("CREATE TABLE t (v INTEGER)")
        conn.execute("INSERT INTO t VALUES (7)")
    reader = SqliteReader(Path("proj"), "x.db")
    try:
        assert reader.connection().execute("SELECT v FROM t").fetchall() == [(7,)]
    finally:
        reader.close()
    with sqlite3.connect("proj/synonyms.db") as conn:
        conn.execute("CREATE TABLE pairs (namespace TEXT, term_key TEXT, synonym_key TEXT, synonym TEXT)")
        conn.execute("CREATE TABLE additions (position TEXT, namespace TEXT, term TEXT, synonyms TEXT, "
                     "ms INT, seq INT)")
        conn.execute("INSERT INTO pairs VALUES ('shared', 'port', '端口', '端口')")
    synonyms = SynonymsReader(Path("proj"))
    try:
        assert synonyms.expansions("which port", ["shared"]) == ["端口"]
        assert synonyms.additions() == []
    finally:
        synonyms.close()
