"""Sending bytes an HTTP client library would refuse to build, and reading the raw answer."""

from __future__ import annotations

import asyncio


async def send_raw(host: str, port: int, raw: bytes, timeout_s: float = 10.0) -> tuple[int, bytes, bytes]:
    """Write `raw` on a fresh connection, read until the server closes it: (status, head, body)."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(raw)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), timeout_s)
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), head, body
