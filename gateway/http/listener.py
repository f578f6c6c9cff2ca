"""Serving the app with protocol-level errors in the one JSON error shape.

aiohttp's HTTP parser answers some requests itself, before any middleware runs: a header line over
8 KiB, a malformed chunk size, a method token with invalid characters (400), and a handler that
crashed outside the middlewares (500). Its `RequestHandler.handle_error` writes those as plain text;
here each connection's handler gets a `handle_error` that writes `{"error": {code, message, details}}`
instead. `run` replaces `web.run_app` (same signals, shutdown timeout and loop clean-up).
"""

from __future__ import annotations

import asyncio
import contextlib
from http import HTTPStatus
from typing import Any

import structlog
from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from commands.error_codes import ErrorCode
from gateway.http.errors import error_response

log = structlog.get_logger(__name__)

_CODES = {400: ErrorCode.BAD_REQUEST, 500: ErrorCode.INTERNAL_ERROR}


class JsonErrorRequestHandler(RequestHandler):
    """aiohttp's connection handler, its error answers in the one JSON error shape."""

    __slots__ = ()

    def handle_error(self, request: Any, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        super().handle_error(request, status, exc, message)   # logs; raises if a response already began
        text = HTTPStatus(status).phrase if status >= 500 or not message else message.strip().splitlines()[0]
        resp = error_response(status, _CODES.get(status, ErrorCode.HTTP_ERROR), text)
        resp.force_close()
        return resp


class _JsonErrorProtocols:
    """The protocol factory a site listens with: aiohttp's, each handler made a JsonErrorRequestHandler
    (a subclass with no state of its own: the class swap keeps aiohttp's construction, kwargs included)."""

    def __init__(self, server: web.Server) -> None:
        self._server = server

    def __call__(self) -> RequestHandler:
        handler = self._server()
        if type(handler) is RequestHandler:
            handler.__class__ = JsonErrorRequestHandler
        return handler

    def __getattr__(self, name: str) -> Any:   # requests_count, connections, shutdown, ... of the server
        return getattr(self._server, name)


class JsonErrorAppRunner(web.AppRunner):
    @property
    def server(self) -> Any:
        inner = super().server
        return None if inner is None else _JsonErrorProtocols(inner)


async def serve(app: web.Application, host: str, port: int, *, shutdown_timeout: float = 10.0,
                handle_signals: bool = True) -> None:
    """Serve `app` until cancelled (SIGINT/SIGTERM raise GracefulExit in the loop); then clean up."""
    runner = JsonErrorAppRunner(app, handle_signals=handle_signals, access_log=None,
                                shutdown_timeout=shutdown_timeout)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        while True:
            await asyncio.sleep(3600)
    finally:
        await runner.cleanup()


def run(app: web.Application, host: str, port: int, *, loop: asyncio.AbstractEventLoop,
        shutdown_timeout: float = 10.0) -> None:
    """`web.run_app` with JSON protocol errors: serve until SIGINT/SIGTERM, clean up, close the loop."""
    main = loop.create_task(serve(app, host, port, shutdown_timeout=shutdown_timeout))
    try:
        loop.run_until_complete(main)
    except (web.GracefulExit, KeyboardInterrupt):
        pass
    finally:
        try:
            if not main.done():   # a startup failure keeps its own traceback
                main.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    loop.run_until_complete(main)
        finally:
            _cancel_all(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            log.error("shutdown.task_failed", task=task.get_name(), error=str(task.exception()))
