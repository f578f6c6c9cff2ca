"""What a LAN replica's gateway holds besides the services every gateway has: its client to the
primary, the outbox of buffered votes, the clock that stamps them and the link that sends them."""

from __future__ import annotations

from dataclasses import dataclass

from replicas.audit_sink import OpsSink
from replicas.link import ReplicaLink
from events.redis.replication_link import LinkStatus
from replicas.observed_clock import ObservedClock
from replicas.outbox import Outbox
from replicas.primary_client import PrimaryClient


@dataclass
class ReplicaRuntime:
    client: PrimaryClient
    outbox: Outbox
    clock: ObservedClock
    link: ReplicaLink
    primary_redis: str          # the primary's Redis, without credentials (for /health)
    link_status: LinkStatus     # how long its Redis has been cut off from the primary's
    auth_grace_s: float = 60.0  # cut off longer: agent keys are refused (503), they may have been revoked

    @property
    def sink(self) -> OpsSink:
        """Where the replica's recall audits go (its primary)."""
        return OpsSink(self.client)
