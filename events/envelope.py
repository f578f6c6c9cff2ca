"""The event envelope: one frozen dataclass for every event on `zhiyi:events`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from events.hlc import HLC


@dataclass(frozen=True, slots=True)
class Event:
    """An immutable fact. `position`, `hlc` and `origin` are assigned by the store on append.

    - `type`: registered dotted past-tense name (`memory.committed`).
    - `data`: the payload dataclass of that type (or `UnknownPayload` for types this build
      does not know; such events are kept and skipped, never fatal).
    - `ns`: namespace the event belongs to; `agent`: the agent the request acted as;
      `by`: "admin" when the admin key acted on the agent's behalf.
    - `cause`: position of the event that caused this one (reactions).
    """

    type: str
    data: Any
    ns: str = ""
    agent: str = ""
    by: str = ""
    cause: str = ""
    v: int = 1
    position: str = ""
    hlc: str = ""
    origin: str = ""

    @property
    def wall_ms(self) -> int:
        """Wall-clock ms of the HLC stamp (deterministic: recorded in the event)."""
        return HLC.parse(self.hlc).wall_ms if self.hlc else 0

    def placed(self, *, position: str, hlc: str, origin: str) -> "Event":
        return replace(self, position=position, hlc=hlc, origin=origin)


@dataclass(frozen=True, slots=True)
class UnknownPayload:
    """Payload of an event type this build does not know: kept verbatim, skipped by projectors."""

    raw: dict[str, Any]
