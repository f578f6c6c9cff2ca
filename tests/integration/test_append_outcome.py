"""An append whose answer is lost raises OutcomeUnknown (the gateway: 503 `outcome_unknown`), is never
re-sent by the client (no doubled events), and a retry with the same idempotency key writes once; a
Redis that cannot be reached before sending stays a plain connection error (503 `unavailable`).

A real TCP relay sits between the store and the test's real redis-server and can swallow replies."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from events.redis import keys
from events.catalogue import SynonymAdded, new_event
from events.errors import OutcomeUnknown
from events.redis.client import connect
from events.redis.store import EventStore, Idempotency


class Relay:
    """Forwards bytes both ways; `swallow` drops the server's next reply and closes the client side."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.swallow = False
        self.server: asyncio.AbstractServer | None = None
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.writers += [writer, up_writer]

        async def pump(src, dst, replies: bool) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await src.read(65536):
                    if replies and self.swallow:
                        break
                    dst.write(data)
                    await dst.drain()
            for w in (writer, up_writer):
                w.close()

        await asyncio.gather(pump(reader, up_writer, False), pump(up_reader, writer, True))

    async def stop(self) -> None:
        self.server.close()
        for w in self.writers:
            w.close()
        await self.server.wait_closed()


def _event(term: str):
    return new_event(SynonymAdded(term, ("alias",), "shared"), ns="shared", agent="admin", by="admin")


async def test_a_lost_answer_is_an_unknown_outcome_and_never_resent(redis_url, redis):
    relay = Relay(int(redis_url.rsplit(":", 1)[1].split("/")[0]))
    port = await relay.start()
    client = connect(f"redis://127.0.0.1:{port}/0")
    store = EventStore(client, origin="relay-test")
    try:
        await store.append([_event("first")])
        assert await redis.xlen(keys.STREAM) == 1

        relay.swallow = True
        idem = Idempotency("alice", "k-1", "fp-1")
        with pytest.raises(OutcomeUnknown, match="retry with the same Idempotency-Key"):
            await store.append([_event("keyed")], idempotency=idem)
        relay.swallow = False
        await client.ping()  # the pool's connection is open again (its handshake answered)
        relay.swallow = True
        with pytest.raises(OutcomeUnknown):
            await store.append([_event("unkeyed")])
        # both scripts ran once: the client did not send either again after losing the answer
        assert await redis.xlen(keys.STREAM) == 3

        relay.swallow = False
        again = await store.append([_event("keyed")], idempotency=idem)
        assert again.duplicate
        assert await redis.xlen(keys.STREAM) == 3

        await relay.stop()  # unreachable before anything is sent: a plain connection error
        await asyncio.sleep(0.1)  # (the client sees its pooled connection closed, as after a real outage)
        with pytest.raises(RedisConnectionError):
            await store.append([_event("never")])
        assert await redis.xlen(keys.STREAM) == 3
    finally:
        await client.aclose()
        with contextlib.suppress(Exception):
            await relay.stop()


async def test_an_append_refused_while_redis_loads_is_unavailable_not_unknown(tmp_path):
    """A server reading its data (a replica's full resync, a reload) answers LOADING on the connections it
    already has: the script did not run, so the append raises the connection error (503 `unavailable`),
    not OutcomeUnknown, and the same idempotency key writes once the server is up."""
    import threading
    import time

    from redis.exceptions import BusyLoadingError

    from tests.redis_process import RestartableRedis

    server = RestartableRedis(tmp_path / "loading").start(extra=("--enable-debug-command", "yes"))
    client = connect(server.url)
    try:
        admin = server.client()
        pipe = admin.pipeline(transaction=False)
        for i in range(400):
            pipe.set(f"filler:{i}", "x" * 64)
        pipe.execute()
        admin.config_set("key-load-delay", 10000)       # 10 ms a key: about 4 s loading,
        admin.config_set("loading-process-events-interval-bytes", 1024)   # answering clients meanwhile
        store = EventStore(client, origin="loading-test")
        await store.append([_event("before")])        # the pool holds a checked connection
        reload = threading.Thread(target=lambda: admin.execute_command("DEBUG", "RELOAD"))
        reload.start()
        deadline = time.monotonic() + 10
        while _raw_ping(server.port) != b"-LOADING":   # a raw socket: redis-py retries
            assert time.monotonic() < deadline, "the server was never seen loading"
            time.sleep(0.02)
        idem = Idempotency("alice", "k-loading", "fp-1")
        with pytest.raises(BusyLoadingError):
            await store.append([_event("while loading")], idempotency=idem)
        reload.join(timeout=30)
        first = await store.append([_event("while loading")], idempotency=idem)
        assert not first.duplicate                    # the refused attempt wrote nothing
        assert server.client().xlen(keys.STREAM) == 2
    finally:
        await client.aclose()
        server.stop()


def _raw_ping(port: int) -> bytes:
    """The first word of a PING's reply (b"" when the server does not answer)."""
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).split(b" ")[0].strip()
    except OSError:
        return b""
