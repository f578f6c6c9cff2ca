"""A test's push-socket client: connects to /api/v1/ws/{agent_id} and collects the JSON messages."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import struct
from dataclasses import dataclass, field
from typing import Any, Iterator

from aiohttp import WSMsgType


@dataclass
class Listener:
    ws: Any
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def connected(self) -> dict[str, Any]:
        return self.messages[0]

    async def next(self, kind: str | None = None, timeout_s: float = 10.0) -> dict[str, Any]:
        """The next message (of type `kind`, skipping others), failing after `timeout_s`."""
        async with asyncio.timeout(timeout_s):
            while True:
                msg = await self.ws.receive()
                if msg.type != WSMsgType.TEXT:
                    raise AssertionError(f"the socket ended: {msg.type} {msg.data!r} {msg.extra!r}")
                body = json.loads(msg.data)
                self.messages.append(body)
                if kind is None or body["type"] == kind:
                    return body

    async def quiet(self, seconds: float = 0.5) -> list[dict[str, Any]]:
        """Whatever arrives within `seconds` (an agent that must hear nothing hears nothing)."""
        got = []
        try:
            async with asyncio.timeout(seconds):
                while True:
                    msg = await self.ws.receive()
                    if msg.type != WSMsgType.TEXT:
                        return got
                    got.append(json.loads(msg.data))
        except TimeoutError:
            return got

    async def close(self) -> None:
        await self.ws.close()


async def listen(client: Any, agent_id: str, key: str, *, after: str | None = None,
                 in_query: bool = False) -> Listener:
    params = {"after": after} if after else {}
    headers = {}
    if in_query:
        params["api_key"] = key
    else:
        headers["X-API-Key"] = key
    ws = await client.ws_connect(f"/api/v1/ws/{agent_id}", params=params, headers=headers)
    listener = Listener(ws)
    first = await listener.next()
    assert first["type"] == "connected" and first["data"]["agent_id"] == agent_id, first
    return listener


class StalledSocket:
    """A WebSocket client on a raw socket with a tiny receive buffer that reads nothing until told to:
    the client a server must not let grow its memory. `frames()` then reads what the server sent."""

    def __init__(self, host: str, port: int, path: str, key: str) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect((host, port))
        nonce = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {nonce}\r\nSec-WebSocket-Version: 13\r\n"
                           f"X-API-Key: {key}\r\n\r\n").encode())
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += self.sock.recv(4096)
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 101"), head

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed by the server")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def frames(self) -> Iterator[tuple[int, bytes]]:
        """(opcode, payload) of each server frame (servers do not mask), until the connection ends."""
        self.sock.settimeout(10)
        while True:
            try:
                b0, b1 = self._read(2)
            except ConnectionError:
                return
            size = b1 & 0x7F
            if size == 126:
                size = struct.unpack(">H", self._read(2))[0]
            elif size == 127:
                size = struct.unpack(">Q", self._read(8))[0]
            yield b0 & 0x0F, self._read(size)

    def close(self) -> None:
        self.sock.close()
