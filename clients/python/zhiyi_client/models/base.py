"""What every model shares: the whole JSON answer kept as `raw`, and `Response` for the answers the
client does not model field by field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._fields import obj, opt_text


def raw_field() -> Any:
    """The `raw` field of a model: the answer as received (fields a newer server adds are there),
    left out of repr and comparisons."""
    return field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True, kw_only=True)
class Response:
    """A JSON answer as a read-only mapping (`resp["count"]`, `resp.get("next")`), with its `position`."""

    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> Response:
        return cls(raw=obj(data))

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __contains__(self, key: object) -> bool:
        return key in self.raw

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    @property
    def position(self) -> str | None:
        return opt_text(self.raw, "position")
