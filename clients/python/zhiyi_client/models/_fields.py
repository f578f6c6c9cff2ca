"""Reading fields out of a server answer (a JSON object), tolerating absent ones: an older or newer
server may leave out or add fields, and every model keeps the whole answer in `raw` anyway."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

JSON = Mapping[str, Any]


def obj(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one."""
    return dict(value) if isinstance(value, Mapping) else {}


def text(data: JSON, key: str, default: str = "") -> str:
    value = data.get(key)
    return value if isinstance(value, str) else default


def opt_text(data: JSON, key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


def integer(data: JSON, key: str, default: int = 0) -> int:
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def opt_integer(data: JSON, key: str) -> int | None:
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def number(data: JSON, key: str, default: float = 0.0) -> float:
    value = data.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def opt_number(data: JSON, key: str) -> float | None:
    value = data.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def flag(data: JSON, key: str, default: bool = False) -> bool:
    value = data.get(key)
    return value if isinstance(value, bool) else default


def texts(data: JSON, key: str) -> tuple[str, ...]:
    value = data.get(key)
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def objects(data: JSON, key: str) -> list[dict[str, Any]]:
    """The JSON objects of a list field."""
    value = data.get(key)
    return [dict(v) for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def mapping(data: JSON, key: str) -> dict[str, Any]:
    return obj(data.get(key))
