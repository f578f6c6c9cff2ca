"""A local stand-in for an OpenAI-compatible `/v1/chat/completions` provider: each test gives the
function that answers a request; this module speaks the wire format around it."""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from aiohttp import web


def chat_reply(content: str) -> web.Response:
    """A chat completion whose one choice says `content`."""
    return web.json_response({"id": "c1", "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]})


async def serve_chat(aiohttp_server: Any, complete: Callable[[web.Request], Awaitable[web.StreamResponse]],
                     state: dict) -> Any:
    """A test server answering `POST /v1/chat/completions` with `complete`; `server.state` is `state`."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", complete)
    server = await aiohttp_server(app)
    server.state = state
    return server
