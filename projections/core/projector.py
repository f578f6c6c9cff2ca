"""The projector protocol: a fold of event batches into one read model.

A projector owns its rows *and* its checkpoint (the position of the last event it applied).
`apply` writes the rows, then the checkpoint, and is effectively-once: applying an event
twice, or a batch again after a crash between the rows and the checkpoint, changes nothing.
Event types it does not fold (including `UnknownPayload` events from newer builds) are
skipped but still advance the checkpoint.

Optional capabilities, discovered with `isinstance` on the runtime-checkable protocols:

- `Maintainable.maintain()` — periodic housekeeping (compaction, index refresh) that must not
  change the digest; the runner calls it at most every `maintain_every_s`.
- `Preparable.prepare(events)` — side-effect-free warm-up for a batch that is about to be
  applied (e.g. embedding new contents); the runner overlaps it with applying the previous batch.
- `Generational.read_scope(event)` — the namespace whose reads the event can change ("*" for
  every namespace, None for none); the runner publishes these generations with the checkpoint
  and search caches key on them.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from events import positions
from events.envelope import Event, UnknownPayload


@runtime_checkable
class Projector(Protocol):
    name: str

    async def load_checkpoint(self) -> str | None:
        """Position of the last applied event, None when nothing was applied yet."""
        ...

    async def apply(self, events: list[Event]) -> None:
        """Fold a batch (oldest first): write rows, then the checkpoint. Effectively-once."""
        ...

    async def digest(self) -> str:
        """Logical digest of the rows as of the checkpoint (DESIGN §1)."""
        ...

    async def close(self) -> None:
        ...


@runtime_checkable
class Maintainable(Protocol):
    async def maintain(self) -> None:
        ...


@runtime_checkable
class Preparable(Protocol):
    async def prepare(self, events: list[Event]) -> None:
        ...


@runtime_checkable
class Generational(Protocol):
    def read_scope(self, event: Event) -> str | None:
        ...


def generations(projector: Generational, events: list[Event]) -> dict[str, str]:
    """{namespace: position of the last event in `events` that changes its reads}."""
    out: dict[str, str] = {}
    for e in events:
        scope = projector.read_scope(e)
        if scope is not None:
            out[scope] = e.position
    return out


def is_unknown(event: Event) -> bool:
    return isinstance(event.data, UnknownPayload)


def after_checkpoint(events: list[Event], checkpoint: str | None) -> list[Event]:
    """The events of a batch that lie strictly after `checkpoint` (position order, not strings)."""
    if not checkpoint:
        return list(events)
    mark = positions.key(checkpoint)
    return [e for e in events if positions.key(e.position) > mark]


def last_position(events: list[Event], checkpoint: str | None) -> str | None:
    """The checkpoint after a batch: never moves backwards."""
    pos = checkpoint
    for e in events:
        pos = positions.later(pos, e.position)
    return pos
