"""deploy/zhiyi-upstream.py: which instances become nginx `server` lines, and when the file is rewritten."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "zhiyi-upstream.py"
ADMIN_KEY = "zka_test_admin"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("zhiyi_upstream", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


upstream = _load()


def _instance(instance_id: str, role: str = "replica", status: str = "up",
              url: str | None = "http://10.0.0.5:7821") -> dict[str, Any]:
    return {"instance_id": instance_id, "role": role, "status": status, "last_seen": "2025-01-01T00:00:00Z",
            "version": "1", "position": None, "lag_events": 0, "lag_ms": 0, "url": url}


def test_upstream_lines_keep_serving_instances_that_are_up_sorted_and_deduplicated() -> None:
    lines = upstream.upstream_lines([
        _instance("r2", url="http://10.0.0.7:7821"),
        _instance("gw", role="gateway", url="http://10.0.0.5:7821/"),
        _instance("r1", url="http://10.0.0.6:7821"),
        _instance("r1-again", url="http://10.0.0.6:7821"),          # the same address twice
        _instance("down", status="down", url="http://10.0.0.8:7821"),
        _instance("no-url", url=None),
        _instance("proj", role="projector", url="http://10.0.0.9:7821"),
        _instance("bad", url="not a url"),
        _instance("https", url="https://zhiyi.lan"),
    ])
    assert lines == [
        "server 10.0.0.5:7821 max_fails=2 fail_timeout=10s;",
        "server 10.0.0.6:7821 max_fails=2 fail_timeout=10s;",
        "server 10.0.0.7:7821 max_fails=2 fail_timeout=10s;",
        "server zhiyi.lan:443 max_fails=2 fail_timeout=10s;",
    ]


def test_upstream_lines_bracket_ipv6_and_are_empty_when_nothing_serves() -> None:
    assert upstream.upstream_lines([_instance("v6", url="http://[fd00::5]:7821")]) == [
        "server [fd00::5]:7821 max_fails=2 fail_timeout=10s;"]
    assert upstream.upstream_lines([_instance("d", status="down"), _instance("p", role="projector")]) == []


def test_write_if_changed(tmp_path: Path) -> None:
    path = tmp_path / "zhiyi-upstream.conf"
    assert upstream.write_if_changed(path, "server a:1;\n") is True
    assert path.read_text() == "server a:1;\n"
    os.utime(path, (1_000_000, 1_000_000))
    inode = path.stat().st_ino

    assert upstream.write_if_changed(path, "server a:1;\n") is False     # unchanged: not touched
    assert path.stat().st_mtime == 1_000_000 and path.stat().st_ino == inode

    assert upstream.write_if_changed(path, "server b:2;\n") is True
    assert path.read_text() == "server b:2;\n"
    assert path.stat().st_ino != inode                                  # replaced by a rename
    assert sorted(p.name for p in tmp_path.iterdir()) == ["zhiyi-upstream.conf"]   # no temporary left


class _Primary(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _InstancesHandler)
        self.instances: list[dict[str, Any]] = []
        self.keys_seen: list[str | None] = []


class _InstancesHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        server = self.server
        assert isinstance(server, _Primary)
        server.keys_seen.append(self.headers.get("X-API-Key"))
        if self.path != "/api/v1/instances":
            self._reply(404, {"error": "not_found"})
        elif self.headers.get("X-API-Key") != ADMIN_KEY:
            self._reply(401, {"error": "unauthorized"})
        else:
            self._reply(200, {"instances": server.instances, "log": {"last_position": None}})

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        pass


@pytest.fixture
def primary() -> Iterator[_Primary]:
    server = _Primary()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _argv(primary: _Primary, tmp_path: Path, output: Path, marker: Path) -> list[str]:
    key_file = tmp_path / "admin_key"
    key_file.write_text(ADMIN_KEY + "\n")
    touch = f"{shlex.quote(sys.executable)} -c 'import pathlib, sys; pathlib.Path(sys.argv[1]).touch()' " \
            f"{shlex.quote(str(marker))}"
    return ["--primary", f"http://127.0.0.1:{primary.server_address[1]}/", "--api-key-file", str(key_file),
            "--output", str(output), "--reload-command", touch, "--timeout", "2"]


def test_main_writes_the_file_and_reloads_only_when_it_changed(primary: _Primary, tmp_path: Path) -> None:
    output, marker = tmp_path / "zhiyi-upstream.conf", tmp_path / "reloaded"
    primary.instances = [_instance("gw", role="gateway", url="http://10.0.0.5:7821"),
                         _instance("r1", url="http://10.0.0.6:7821"),
                         _instance("r2", status="down", url="http://10.0.0.7:7821")]
    argv = _argv(primary, tmp_path, output, marker)

    assert upstream.main(argv) == 0
    assert primary.keys_seen == [ADMIN_KEY]
    servers = [line for line in output.read_text().splitlines() if not line.startswith("#")]
    assert servers == ["server 10.0.0.5:7821 max_fails=2 fail_timeout=10s;",
                       "server 10.0.0.6:7821 max_fails=2 fail_timeout=10s;"]
    assert marker.exists()

    marker.unlink()
    assert upstream.main(argv) == 0                                    # same instances: no reload
    assert not marker.exists()

    primary.instances[2]["status"] = "up"
    assert upstream.main(argv) == 0
    assert "server 10.0.0.7:7821" in output.read_text() and marker.exists()


def test_main_keeps_the_file_when_no_instance_is_up(primary: _Primary, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    output, marker = tmp_path / "zhiyi-upstream.conf", tmp_path / "reloaded"
    output.write_text("server 10.0.0.5:7821 max_fails=2 fail_timeout=10s;\n")
    primary.instances = [_instance("gw", role="gateway", status="down"), _instance("r1", url=None)]

    assert upstream.main(_argv(primary, tmp_path, output, marker)) == 1
    assert output.read_text() == "server 10.0.0.5:7821 max_fails=2 fail_timeout=10s;\n"
    assert not marker.exists()
    assert "no gateway or replica is up" in capsys.readouterr().err


def test_main_fails_without_touching_the_file_on_errors(primary: _Primary, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    output, marker = tmp_path / "zhiyi-upstream.conf", tmp_path / "reloaded"
    output.write_text("old\n")
    primary.instances = [_instance("gw", role="gateway")]
    argv = _argv(primary, tmp_path, output, marker)

    (tmp_path / "admin_key").write_text("wrong\n")
    assert upstream.main(argv) == 1                                    # the primary refuses the key
    assert "HTTP 401" in capsys.readouterr().err

    monkeypatch.delenv("ZHIYI_ADMIN_KEY", raising=False)
    assert upstream.main(argv[:2] + argv[4:]) == 1                     # no key at all
    assert "no admin key" in capsys.readouterr().err

    monkeypatch.setenv("ZHIYI_ADMIN_KEY", ADMIN_KEY)
    failing = argv[:2] + argv[4:6] + ["--reload-command", "false"]
    assert upstream.main(failing) == 1                                 # reload failed: the old file is back
    assert output.read_text() == "old\n"
    assert "'false' exited 1" in capsys.readouterr().err
    assert not marker.exists()
