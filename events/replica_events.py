"""The LAN replica events (seed 4.1; registered in `events.catalogue`, which re-exports them)."""

from __future__ import annotations

from dataclasses import dataclass

from events.catalogue import event_type


@event_type("replica.registered")
@dataclass(frozen=True, slots=True)
class ReplicaRegistered:
    """The admin issued a replica key for `instance_id`: the sha256 of the key, never the key. A later
    one for the same instance replaces (revokes) the earlier key. The key authenticates the replica's
    `POST /api/v1/replicas/{instance_id}/ops` only: it is neither an agent's key nor the admin's."""

    instance_id: str
    key_hash: str
