from __future__ import annotations

import pytest

from events import positions
from events.catalogue import (
    AgentRegistered, MemoryCommitted, MemoryDeleted, RecallServed, event_type, known_types, new_event,
    payload_from_dict,
)
from events.codec import decode, encode_fields, to_json_dict
from events.envelope import UnknownPayload
from events.errors import UnknownEventType
from events.hlc import HLC, iso_from_ms


def _roundtrip(event, position="1700000000000-0", hlc="1700000000000:0:n"):
    flat = encode_fields(event, "n")
    fields = dict(zip(flat[::2], flat[1::2]))
    fields[b"h"] = hlc.encode()
    return decode(position.encode(), fields)


@pytest.mark.parametrize("payload", [
    AgentRegistered("a", "generic", "a-main", "a-ephemeral", "ab" * 32),
    MemoryCommitted("m1", "用户偏好：话少直接，结论先行", "shared", "preference", "user_pref", tags=("偏好", "style")),
    MemoryDeleted("m1", "a-main", 2, "obsolete"),
    RecallServed("nginx 端口", ("a-main", "shared"), ("m1", "m2"), (0.9, 0.5), 10),
])
def test_codec_roundtrip_keeps_every_field(payload):
    ev = new_event(payload, ns="a-main", agent="a", by="admin", cause="1-0")
    back = _roundtrip(ev)
    assert back.data == payload
    assert (back.type, back.ns, back.agent, back.by, back.cause, back.origin) == (
        ev.type, "a-main", "a", "admin", "1-0", "n")
    assert back.position == "1700000000000-0"
    assert back.wall_ms == 1700000000000


def test_unknown_type_is_kept_not_fatal():
    fields = {b"t": b"future.thing", b"v": b"3", b"d": b'{"x": 1}', b"h": b"1:0:n"}
    ev = decode("5-0", fields)
    assert ev.type == "future.thing"
    assert isinstance(ev.data, UnknownPayload) and ev.data.raw == {"x": 1}
    assert to_json_dict(ev)["data"] == {"x": 1}


def test_upcaster_runs_for_old_versions():
    from dataclasses import dataclass

    @event_type("test.upcasted", version=2, upcasters={1: lambda d: {"name": d["old_name"], "n": 0}})
    @dataclass(frozen=True)
    class Upcasted:
        name: str
        n: int

    assert payload_from_dict("test.upcasted", 1, {"old_name": "x"}) == Upcasted("x", 0)
    assert payload_from_dict("test.upcasted", 2, {"name": "y", "n": 2}) == Upcasted("y", 2)
    assert "test.upcasted" in known_types()


def test_new_event_rejects_unregistered_payloads():
    with pytest.raises(UnknownEventType):
        new_event(object(), ns="x", agent="a")


def test_positions_compare_as_integer_pairs_not_strings():
    assert positions.key("10-0") > positions.key("9-5")
    assert positions.reached("10-0", "9-99")
    assert not positions.reached("9-99", "10-0")
    assert positions.reached(None, None) and not positions.reached(None, "1-0")
    assert positions.later("2-1", "2-0") == "2-1"
    assert not positions.is_valid("abc") and not positions.is_valid("1-2-3") and positions.is_valid("0-0")
    with pytest.raises(ValueError):
        positions.parse("1.5-0")


def test_remembered_positions_still_reject_what_is_not_one_every_time():
    """`parse` and `key` are lru caches: a failure is not remembered, a non-string never parses."""
    assert positions.key("") == positions.key(None) == (-1, -1)
    for _ in range(2):
        for bad in ("1.5-0", "x-1", "1-2-3", 7, b"1-2", True):
            with pytest.raises(ValueError):
                positions.parse(bad)   # type: ignore[arg-type]
            with pytest.raises(ValueError):
                positions.key(bad)   # type: ignore[arg-type]
    assert positions.parse("18446744073709551615-0") == (2**64 - 1, 0)


def test_hlc_parse_and_order():
    a, b = HLC.parse("1000:2:n1"), HLC.parse("1000:10:n1")
    assert a < b and str(a) == "1000:2:n1"
    assert iso_from_ms(1700000000123) == "2023-11-14T22:13:20.123Z"


def test_a_payload_encodes_to_the_bytes_of_its_field_dict_for_every_event_type() -> None:
    """`encode_payload` lets orjson serialise the dataclass itself: the same bytes as the dict of its fields
    (what was written before), for every type of the fixture log (it holds them all)."""
    import orjson

    from events.catalogue import known_types
    from events.codec import encode_payload, payload_to_dict
    from tests.fixture_log import read_entries

    seen = set()
    for position, fields in read_entries():
        event = decode(position, {k.encode(): v.encode() for k, v in fields})
        assert encode_payload(event.data) == orjson.dumps(payload_to_dict(event.data))
        seen.add(event.type)
    assert seen >= {t for t in known_types() if not t.startswith("test.")}   # less this module's own
