"""The one adapter that shapes Redis replies (RESP2, bytes; decode_responses=False)."""

from __future__ import annotations

from typing import Any


def as_str(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode()
    return "" if value is None else str(value)


def hash_to_str(reply: Any) -> dict[str, str]:
    if not reply:
        return {}
    return {as_str(k): as_str(v) for k, v in reply.items()}


def entries(reply: Any) -> list[tuple[str, dict[bytes, bytes]]]:
    """XRANGE/XREAD entries -> [(position, {field: value})]."""
    out = []
    for pos, fields in reply or ():
        if isinstance(fields, list):  # tolerate flat replies
            fields = dict(zip(fields[::2], fields[1::2]))
        out.append((as_str(pos), fields))
    return out
