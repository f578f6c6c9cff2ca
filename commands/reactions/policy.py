"""What a reaction is: a policy that, given one event of the log, decides follow-up events.

A policy never reads the clock or calls a model inside a projector: it runs here, on the command
side, and records what it decided as events (their `cause` is the event that triggered them).
Before `decide` runs, the projections it names in `reads` have reached the cause event, so what
it reads already reflects that event.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from events.envelope import Event


@runtime_checkable
class Policy(Protocol):
    name: str                      # stable: part of every follow-up's idempotency key
    reads: tuple[str, ...]         # projections that must have reached the cause event

    def wants(self, event: Event) -> bool:
        """Cheap filter: does this policy react to `event` at all?"""

    async def decide(self, event: Event) -> list[Event]:
        """The follow-up events for `event` (possibly none). Must be a function of the event and
        of projections at or after it: a redelivery may decide again, and only the first
        decision is ever appended."""
