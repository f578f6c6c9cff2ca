"""tests/tcp_proxy.py: bytes go through unchanged, cut() partitions, heal() ends the partition."""

from __future__ import annotations

import os
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis as sync_redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from redis_process import RestartableRedis
from tcp_proxy import TcpProxy


class _EchoHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server = self.server
        assert isinstance(server, _EchoServer)
        server.accepted += 1
        while True:
            try:
                data = self.request.recv(65536)
            except OSError:
                return
            if not data:
                return
            server.received += len(data)
            self.request.sendall(data)


class _EchoServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _EchoHandler)
        self.accepted = 0
        self.received = 0


@pytest.fixture
def echo() -> Iterator[_EchoServer]:
    server = _EchoServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy(echo: _EchoServer) -> Iterator[TcpProxy]:
    p = TcpProxy("127.0.0.1", echo.server_address[1]).start()
    yield p
    p.stop()


def _connect(proxy: TcpProxy) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=2)
    sock.settimeout(2)
    return sock


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(1 << 20, n - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _dead_within(sock: socket.socket, seconds: float) -> bool:
    """True when the socket sees EOF or a reset within `seconds` (no data)."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def _nothing_gets_through(proxy: TcpProxy) -> bool:
    """A connection made during a cut is reset (at connect, or within 1 s) and nothing comes back."""
    try:
        sock = _connect(proxy)
    except ConnectionError:
        return True                         # reset before connect() even returned
    with sock:
        try:
            sock.sendall(b"lost")
        except OSError:
            return True                     # already reset
        return _dead_within(sock, 1.0)


def _wait_for(condition: Callable[[], bool], timeout: float = 1.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def test_bytes_round_trip_small_and_5mb(proxy: TcpProxy) -> None:
    assert proxy.url_host_port == f"127.0.0.1:{proxy.port}"
    with _connect(proxy) as sock:
        sock.sendall(b"ping\r\n")
        assert _recv_exactly(sock, 6) == b"ping\r\n"
        payload = os.urandom(5 * 1024 * 1024)
        sender = threading.Thread(target=sock.sendall, args=(payload,), daemon=True)
        sender.start()              # send and receive at once: the echo would otherwise fill both buffers
        assert _recv_exactly(sock, len(payload)) == payload
        sender.join(2)
        assert proxy.connections == 1


def test_many_concurrent_connections(proxy: TcpProxy) -> None:
    socks = [_connect(proxy) for _ in range(50)]
    try:
        for i, sock in enumerate(socks):
            sock.sendall(f"conn-{i};".encode())
        for i, sock in enumerate(socks):
            expected = f"conn-{i};".encode()
            assert _recv_exactly(sock, len(expected)) == expected
        assert _wait_for(lambda: proxy.connections == 50)
    finally:
        for sock in socks:
            sock.close()
    assert _wait_for(lambda: proxy.connections == 0)


def test_client_close_closes_the_target_side(proxy: TcpProxy, echo: _EchoServer) -> None:
    sock = _connect(proxy)
    sock.sendall(b"x")
    assert _recv_exactly(sock, 1) == b"x"
    sock.shutdown(socket.SHUT_WR)           # a half-close ends the whole proxied connection
    assert _dead_within(sock, 1.0)
    sock.close()
    assert _wait_for(lambda: proxy.connections == 0)


def test_cut_closes_open_connections_and_refuses_new_ones(proxy: TcpProxy, echo: _EchoServer) -> None:
    open_sock = _connect(proxy)
    open_sock.sendall(b"hello")
    assert _recv_exactly(open_sock, 5) == b"hello"

    started = time.monotonic()
    proxy.cut()
    assert time.monotonic() - started < 1.0
    assert _dead_within(open_sock, 1.0)
    assert proxy.connections == 0
    open_sock.close()

    accepted, received = echo.accepted, echo.received
    for _ in range(3):
        assert _nothing_gets_through(proxy)
    time.sleep(0.05)
    assert (echo.accepted, echo.received) == (accepted, received)   # the target never saw it

    proxy.heal()
    with _connect(proxy) as after:
        after.sendall(b"again")
        assert _recv_exactly(after, 5) == b"again"


def test_stop_frees_the_port(echo: _EchoServer) -> None:
    proxy = TcpProxy("127.0.0.1", echo.server_address[1]).start()
    port = proxy.port
    sock = _connect(proxy)
    proxy.stop()
    assert _dead_within(sock, 1.0)
    sock.close()
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))         # free again
    assert not any(t.name == f"tcp-proxy->{echo.server_address[1]}" for t in threading.enumerate())


def test_proxies_a_real_redis_server(tmp_path: Path) -> None:
    server = RestartableRedis(tmp_path).start()
    proxy = TcpProxy("127.0.0.1", server.port).start()
    try:
        def client() -> sync_redis.Redis:
            return sync_redis.Redis(host="127.0.0.1", port=proxy.port, socket_timeout=1, socket_connect_timeout=1,
                                    retry=Retry(NoBackoff(), 0))

        first = client()
        assert first.ping()
        first.set("big", b"v" * (1 << 20))
        assert first.get("big") == b"v" * (1 << 20)

        proxy.cut()
        with pytest.raises(sync_redis.ConnectionError):
            first.ping()
        with pytest.raises(sync_redis.ConnectionError):
            client().ping()

        proxy.heal()
        assert client().ping()
        first.close()
    finally:
        proxy.stop()
        server.stop()
