"""A message of the push socket (`GET /api/v1/ws/{agent_id}`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._fields import mapping, obj, text

#: the types the server pushes to agents (README, "Push (WebSocket)"); `connected` and `resync` are
#: the socket's own bookkeeping, handled by the listener
PUSH_TYPES = ("prefetch.push", "memory.updated", "conflict.detected", "conflict.resolved", "quality.drop",
              "deep.consolidation.done")


@dataclass(frozen=True, kw_only=True)
class PushMessage:
    """`type` (e.g. `memory.updated`), `position` (of the event it was derived from: it identifies
    the message) and `data`."""

    type: str
    position: str
    data: dict[str, Any]

    @classmethod
    def from_json(cls, data: Any) -> PushMessage:
        d = obj(data)
        return cls(type=text(d, "type"), position=text(d, "position"), data=mapping(d, "data"))
