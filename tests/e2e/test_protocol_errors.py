"""Errors aiohttp's HTTP parser answers before the app runs come in the one JSON error shape too,
when served the way `zhiyi up` serves (gateway/http/listener.py)."""

from __future__ import annotations

import asyncio
import socket

import orjson

from eventually import eventually
from gateway.http import listener
from gateway.http.app import create_app
from tests.e2e.conftest import assert_error, make_settings
from tests.e2e.raw_http import send_raw


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _send(port: int, raw: bytes) -> tuple[int, bytes, bytes]:
    return await send_raw("127.0.0.1", port, raw)


async def test_parser_errors_are_json(redis_url, tmp_path, use_embedder):
    app = create_app(make_settings(redis_url, tmp_path), embedder=use_embedder)
    port = _free_port()
    server = asyncio.create_task(listener.serve(app, "127.0.0.1", port, handle_signals=False))
    try:
        async def health():
            try:
                return await _send(port, b"GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            except OSError:
                return None                      # not listening yet

        status, _, body = await eventually(health, timeout_s=10, interval_s=0.05, what="the server answering /health")
        assert status == 200 and orjson.loads(body)["redis"] is True
        for raw in (b"GET /health HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n",      # header > 8 KiB
                    b"POST /api/v1/commit HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n",
                    b"P@ST /api/v1/commit HTTP/1.1\r\nHost: t\r\n\r\n"):                            # bad method token
            status, head, body = await _send(port, raw)
            assert status == 400, (raw[:40], head, body)
            assert b"application/json" in head.lower(), head
            assert_error(orjson.loads(body), "bad_request")
    finally:
        server.cancel()
        await asyncio.gather(server, return_exceptions=True)
