"""The only module that knows the wire format of an event in the stream.

Stream entry fields (bytes): t type, v version, n namespace, a agent, b by, c cause,
o origin, h hlc (added by the append script), d payload (orjson).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import orjson

from events.catalogue import payload_from_dict
from events.envelope import Event, UnknownPayload
from events.errors import DecodeError


def payload_to_dict(data: Any) -> dict[str, Any]:
    if isinstance(data, UnknownPayload):
        return data.raw
    return {f.name: getattr(data, f.name) for f in dataclasses.fields(data)}


def encode_payload(data: Any) -> bytes:
    """The payload's JSON: a dataclass serialised by orjson itself, its fields in order (the bytes of
    `payload_to_dict`'s dict, without building it: every commit pays this)."""
    if isinstance(data, UnknownPayload):
        return orjson.dumps(data.raw)
    return orjson.dumps(data)


def encode_fields(event: Event, origin: str) -> list[bytes]:
    """Flat field/value list for XADD (the append script adds `h`)."""
    return [
        b"t", event.type.encode(),
        b"v", str(event.v).encode(),
        b"n", event.ns.encode(),
        b"a", event.agent.encode(),
        b"b", event.by.encode(),
        b"c", event.cause.encode(),
        b"o", origin.encode(),
        b"d", encode_payload(event.data),
    ]


def encode_append_fields(event: Event, origin: str) -> list[str]:
    """The same fields as `encode_fields`, as text for the append script's JSON argument."""
    return ["t", event.type, "v", str(event.v), "n", event.ns, "a", event.agent, "b", event.by,
            "c", event.cause, "o", origin, "d", encode_payload(event.data).decode()]


_EVENT_FIELDS = ("type", "data", "ns", "agent", "by", "cause", "v", "position", "hlc", "origin")
assert tuple(f.name for f in dataclasses.fields(Event)) == _EVENT_FIELDS, "decode builds Events positionally"


def decode(position: str | bytes, fields: Mapping[bytes, bytes]) -> Event:
    """Build an Event from one stream entry; unknown types keep their raw payload."""
    if isinstance(position, bytes):
        position = position.decode()
    get = fields.get
    try:
        etype = get(b"t", b"").decode()
        version = int(get(b"v") or 1)
        raw = orjson.loads(get(b"d") or b"{}")
    except (ValueError, orjson.JSONDecodeError) as exc:
        raise DecodeError(f"event {position}: {exc}") from exc
    # positional, in Event's field order (the replay decodes every event: keywords cost ~10% here)
    return Event(etype, payload_from_dict(etype, version, raw), get(b"n", b"").decode(), get(b"a", b"").decode(),
                 get(b"b", b"").decode(), get(b"c", b"").decode(), version, position, get(b"h", b"").decode(),
                 get(b"o", b"").decode())


def to_json_dict(event: Event) -> dict[str, Any]:
    """A JSON-ready view of an event (event browser, APIs)."""
    return {
        "position": event.position,
        "type": event.type,
        "v": event.v,
        "ns": event.ns,
        "agent": event.agent,
        "by": event.by,
        "hlc": event.hlc,
        "origin": event.origin,
        "cause": event.cause,
        "data": payload_to_dict(event.data),
    }
