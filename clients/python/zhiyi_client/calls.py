"""One API call described as data (`Call`), and the I/O-free steps around sending it: `prepare`
builds the HTTP request (URL, headers, JSON body, `after=`, `Idempotency-Key`) and `finish` turns
the answer into a result or an exception. The endpoint functions only build `Call`s; the sync and
async clients only send `Prepared` requests, so each endpoint exists once for both.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import quote, urlencode

from .errors import error_from_response
from .positions import PositionTracker
from .retry import Kind

T = TypeVar("T")

USER_AGENT = "zhiyi-client-python/0.1"


@dataclass(frozen=True)
class Call(Generic[T]):
    """What one endpoint method asks for. `after_in` is where the endpoint takes `after=` (None: it
    takes none); `after` is the caller's own position for this call, overriding the client's mark."""

    method: str
    path: str
    parse: Callable[[Any], T]
    kind: Kind = Kind.READ
    query: Mapping[str, str] = field(default_factory=dict)
    body: Mapping[str, Any] | None = None
    after_in: Literal["query", "body"] | None = None
    after: str | None = None
    idempotency_key: str | None = None
    generate_key: bool = True   # False: the server deduplicates by body; send only a key the caller gave
    text: bool = False          # the answer is text (the Prometheus exposition), not JSON


@dataclass(frozen=True)
class Prepared:
    """A request ready to send, the same bytes on every retry (so the idempotency key and body match)."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None
    kind: Kind


def segment(value: str) -> str:
    """A path parameter, percent-encoded (`/` included)."""
    return quote(value, safe="")


def fields(**values: Any) -> dict[str, Any]:
    """A JSON body from keyword arguments, leaving out the ones that are None (the server refuses
    `null` for an optional field: leave it out instead)."""
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in values.items() if v is not None}


def params(**values: Any) -> dict[str, str]:
    """Query parameters from keyword arguments: None left out, booleans `true`/`false`, lists
    comma-separated (as `include_namespaces` is read)."""
    out: dict[str, str] = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[name] = "true" if value else "false"
        elif isinstance(value, (list, tuple)):
            out[name] = ",".join(str(v) for v in value)
        else:
            out[name] = str(value)
    return out


def prepare(call: Call[Any], base_url: str, api_key: str | None, mark: str | None) -> Prepared:
    """The HTTP request for `call`. `mark` is the client's read-your-writes position (None when it
    has none or is not consistent); the call's own `after` wins over it, and `after=""` sends none."""
    query = dict(call.query)
    body = dict(call.body) if call.body is not None else None
    after = call.after if call.after is not None else mark
    if after and call.after_in == "query":
        query["after"] = after
    elif after and call.after_in == "body":
        body = {**(body or {}), "after": after}
    headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
    if api_key:
        headers["X-API-Key"] = api_key
    if call.method != "GET" and body is None:
        body = {}
    if body is not None:
        headers["Content-Type"] = "application/json"
    if call.kind is Kind.KEYED_WRITE and (call.idempotency_key or call.generate_key):
        # generated once per logical call: every retry of it carries the same key
        headers["Idempotency-Key"] = call.idempotency_key or str(uuid.uuid4())
    url = base_url.rstrip("/") + call.path + (("?" + urlencode(query)) if query else "")
    data = json.dumps(body, ensure_ascii=False).encode() if body is not None else None
    return Prepared(call.method, url, headers, data, call.kind)


def finish(call: Call[T], status: int, headers: Mapping[str, str], payload: bytes,
           tracker: PositionTracker) -> T:
    """The result of an answer: the parsed body, after a write's `position` raised the client's mark;
    an error status raises the matching `ZhiyiError`."""
    text = payload.decode("utf-8", errors="replace")
    if status >= 400:
        raise error_from_response(status, _json_or_text(text), headers)
    if call.text:
        return call.parse(text)
    decoded = _json_or_text(text)
    if call.kind is not Kind.READ and isinstance(decoded, dict):
        tracker.observe(decoded.get("position"))
    return call.parse(decoded)


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        return text
