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
- `Skipping` — event types the projection never changes for (`ignored_types`, e.g. the audit
  event `recall.served` for all but the projections that count recalls). The runner does not
  `apply` a batch made of those alone: it moves its checkpoint in memory, publishes and notifies
  it as for any batch, and has the projector store it durably later with `advance(position)` (with
  the next applied batch's own checkpoint, or on idle, at the end of a catch-up, on stop, and at
  least every few seconds). Until then the stored checkpoint lags behind the published one; the
  rows are the same at both positions, so a restart re-reads those events and skips them again.
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


#: The audit event every recall appends (it only counts): the projections that do not count recalls
#: ignore it (`Skipping.ignored_types`).
RECALL_AUDIT: frozenset[str] = frozenset({"recall.served"})


@runtime_checkable
class Skipping(Protocol):
    ignored_types: frozenset[str]

    async def advance(self, position: str) -> None:
        """Store `position` as the checkpoint (when later than the stored one) without changing a row:
        every event up to it that the projection has not applied is of an ignored type."""
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
    key = positions.key
    return [e for e in events if key(e.position) > mark]


def last_position(events: list[Event], checkpoint: str | None) -> str | None:
    """The checkpoint after a batch: never moves backwards."""
    if not events:
        return checkpoint
    last = max(events, key=lambda e: positions.key(e.position)).position
    return positions.later(checkpoint, last)
