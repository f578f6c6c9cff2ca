"""A TCP proxy a partition test puts between two zhiyi processes (or a replica and the primary's Redis).

Point the client at the proxy instead of the server, then `cut()` to partition the network and
`heal()` to end the partition::

    proxy = TcpProxy("127.0.0.1", redis_port).start()
    replica = start_replica(primary_redis=f"redis://{proxy.url_host_port}")
    proxy.cut()     # every open connection is reset; new ones are refused
    ...             # assert what the replica does while it cannot reach the primary
    proxy.heal()    # new connections are forwarded again (the open ones stay dead, as after a partition)
    proxy.stop()

It is usable from synchronous test code: the proxy runs an asyncio event loop of its own on a daemon
thread, so it never keeps the test process alive and never needs the test's event loop. Bytes are
forwarded both ways unchanged as they arrive (no buffering beyond the transports' flow control, with
TCP_NODELAY, which asyncio sets), so a long-lived Redis replication stream (PSYNC, many MB) and HTTP
both go through with low latency. When one side closes (or half-closes), the other is closed once what
was already received has been written to it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
import struct
import threading
from typing import Any, Callable, TypeVar

T = TypeVar("T")

_LOOP_TIMEOUT_S = 5.0       # how long start()/stop() wait for the proxy's loop
_CUT_TIMEOUT_S = 1.0        # how long cut() waits for the loop to have closed the connections


def _reset(transport: asyncio.Transport | None) -> None:
    """Close a transport at once with a TCP RST (SO_LINGER 0), dropping whatever it still buffers."""
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except (OSError, ValueError):
            pass    # already closed
    transport.abort()


class _Pipe(asyncio.Protocol):
    """One side of a proxied connection: what it receives is written to its peer's transport, and a
    peer whose write buffer fills up pauses this side's reading (flow control both ways)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: _Pipe | None = None
        self.pending: list[bytes] = []      # received before the peer exists
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.peer is None:
            self.pending.append(data)
        elif self.peer.transport is not None and not self.peer.transport.is_closing():
            self.peer.transport.write(data)

    def link(self, peer: _Pipe) -> None:
        """Start forwarding to `peer`, first what arrived before it existed."""
        self.peer = peer
        pending, self.pending = self.pending, []
        for data in pending:
            self.data_received(data)

    def eof_received(self) -> bool:
        """A half-close closes the whole connection: the peer is closed once its buffer is flushed."""
        self._close_peer()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._close_peer()

    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None and not self.peer.transport.is_closing():
            self.peer.transport.resume_reading()

    def _gone(self) -> bool:
        """Closed, or closing (a reset's connection_lost comes a loop iteration later)."""
        return self.closed or self.transport is None or self.transport.is_closing()

    def _close_peer(self) -> None:
        if self.peer is not None and self.peer.transport is not None and not self.peer.transport.is_closing():
            self.peer.transport.close()


class _ClientPipe(_Pipe):
    """The side a client connected to: it opens the matching connection to the target."""

    def __init__(self, proxy: TcpProxy) -> None:
        super().__init__()
        self.proxy = proxy

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if self.proxy.is_cut or self.proxy._stopping:
            _reset(self.transport)
            return
        assert self.transport is not None
        self.transport.pause_reading()      # nothing is read until the target side exists
        self.proxy._register(self)
        self.proxy._spawn(self._connect())

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            _, target = await loop.create_connection(_Pipe, self.proxy.target_host, self.proxy.target_port)
        except (OSError, asyncio.CancelledError) as exc:
            _reset(self.transport)
            if isinstance(exc, asyncio.CancelledError):
                raise
            return
        if self.proxy.is_cut or self.proxy._stopping or self._gone() or target._gone():
            _reset(target.transport)
            _reset(self.transport)
            return
        self.link(target)
        target.link(self)
        assert self.transport is not None
        self.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.proxy._unregister(self)


class TcpProxy:
    """Forwards `listen_host:<port>` to `target_host:target_port` until `cut()`; see the module docstring."""

    def __init__(self, target_host: str, target_port: int, listen_host: str = "127.0.0.1") -> None:
        self.target_host = target_host
        self.target_port = target_port
        self.listen_host = listen_host
        self.port = 0
        self._cut = threading.Event()
        self._pipes: set[_ClientPipe] = set()     # every accepted connection not yet closed
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._stopping = False

    # ------------------------------------------------------------------ public API

    def start(self) -> TcpProxy:
        """Bind a free port on `listen_host` and start forwarding; returns self."""
        if self._loop is not None:
            raise RuntimeError("TcpProxy already started")
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._stopping = False
        self._thread = threading.Thread(target=loop.run_forever, name=f"tcp-proxy->{self.target_port}",
                                        daemon=True)
        self._thread.start()
        try:
            server: asyncio.Server = self._call(self._listen(), _LOOP_TIMEOUT_S)
        except BaseException:
            self.stop()     # e.g. listen_host cannot be bound: no thread is left behind
            raise
        self._server = server
        self.port = server.sockets[0].getsockname()[1]
        return self

    @property
    def url_host_port(self) -> str:
        """`host:port` of the listening side, to put in a URL."""
        host = f"[{self.listen_host}]" if ":" in self.listen_host else self.listen_host
        return f"{host}:{self.port}"

    @property
    def connections(self) -> int:
        """Proxied connections currently open (both sides connected)."""
        return sum(1 for pipe in list(self._pipes) if pipe.peer is not None)

    @property
    def is_cut(self) -> bool:
        """True between `cut()` and `heal()`."""
        return self._cut.is_set()

    def cut(self) -> None:
        """Partition the network: reset every open connection (both sides) and refuse new ones (the port
        stops listening) until `heal()`. Returns once the proxy's loop has done it (never waits on the peers)."""
        self._cut.set()
        if self._loop is None or self._loop.is_closed():
            return
        if threading.current_thread() is self._thread:
            self._reset_all()
            return
        try:
            self._call_soon(self._reset_all, _CUT_TIMEOUT_S)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass    # the flag is set: whatever is left is reset when the loop gets to it

        if self._server is not None:     # new connections are refused (nothing listens) until heal()
            try:
                self._call(self._close_listener(), _LOOP_TIMEOUT_S)
            except (concurrent.futures.TimeoutError, RuntimeError):
                pass

    def heal(self) -> None:
        """End the partition: the port listens again and new connections are forwarded."""
        self._cut.clear()
        if self._loop is not None and self._server is None and self.port:
            self._server = self._call(self._listen(self.port), _LOOP_TIMEOUT_S)

    def stop(self) -> None:
        """Close every connection and the listening socket (the port is free again), end the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if not loop.is_closed() and loop.is_running():
            try:
                self._call(self._shutdown(), _LOOP_TIMEOUT_S)
            except (concurrent.futures.TimeoutError, RuntimeError):
                pass
            loop.call_soon_threadsafe(loop.stop)
        thread.join(_LOOP_TIMEOUT_S)
        if not thread.is_alive():
            loop.close()
        self._loop = self._thread = self._server = None

    def __enter__(self) -> TcpProxy:
        return self if self._loop is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ on the proxy's loop

    async def _listen(self, port: int = 0) -> asyncio.Server:
        loop = asyncio.get_running_loop()
        return await loop.create_server(lambda: _ClientPipe(self), self.listen_host, port, reuse_address=True)

    async def _close_listener(self) -> None:
        await self._settle_accepts()
        server, self._server = self._server, None
        if server is not None:
            server.close()
        self._reset_all()

    async def _shutdown(self) -> None:
        self._stopping = True
        await self._settle_accepts()
        if self._server is not None:
            self._server.close()
        self._reset_all()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for _ in range(3):
            await asyncio.sleep(0)   # let the transports run their connection_lost callbacks

    async def _settle_accepts(self, rounds: int = 10) -> None:
        """Let the connections the loop has accepted reach connection_made (which resets them while
        stopping) before the server closes: asyncio (3.11) sets an accepted connection up in a task of
        its own that fails, leaving the socket open, when the server was closed in between."""
        current = asyncio.current_task()
        for _ in range(rounds):
            pending = [t for t in asyncio.all_tasks() if t is not current and t not in self._tasks]
            if not pending:
                return
            await asyncio.wait(pending, timeout=1.0)

    def _reset_all(self) -> None:
        for pipe in list(self._pipes):
            _reset(pipe.peer.transport if pipe.peer is not None else None)
            _reset(pipe.transport)
        self._pipes.clear()

    def _register(self, pipe: _ClientPipe) -> None:
        self._pipes.add(pipe)

    def _unregister(self, pipe: _ClientPipe) -> None:
        self._pipes.discard(pipe)

    def _spawn(self, coro: Any) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ from the caller's thread

    def _call(self, coro: Any, timeout: float) -> Any:
        """Run a coroutine on the proxy's loop and wait for its result."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def _call_soon(self, fn: Callable[[], T], timeout: float) -> T:
        """Run a plain function on the proxy's loop and wait for its result."""
        assert self._loop is not None
        done: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                done.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 (handed to the waiting thread)
                done.set_exception(exc)

        self._loop.call_soon_threadsafe(run)
        return done.result(timeout)
