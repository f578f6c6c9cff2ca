"""A LAN replica's own pieces in the wiring: its client to the primary, the outbox of buffered votes,
the clock that stamps them, and the link that sends them with the replica's heartbeat
(`replicas/`); `zhiyi replica` starts the process (`gateway.cli.replica`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from events.redis import server_info
from events.redis.store import EventStore
from gateway.process.instance_beat import zhiyi_version
from gateway.process.lag import lag
from replicas.link import ReplicaLink
from events.redis.replication_link import LinkStatus
from replicas.observed_clock import ObservedClock
from replicas.outbox import Outbox
from replicas.primary_client import PrimaryClient
from replicas.runtime import ReplicaRuntime

if TYPE_CHECKING:
    from gateway.process.wiring import Services


def build_replica(s: Services) -> ReplicaRuntime:
    settings = s.settings
    assert settings.primary_url is not None
    client = PrimaryClient(settings.primary_url, settings.instance_id, settings.replica_key or "")
    s._closes(client.close, "primary_client")
    outbox = Outbox(settings.data_dir)
    s._closes_sync(outbox.close, "outbox")

    async def status() -> dict[str, Any]:
        return await replica_status(s)

    return ReplicaRuntime(client, outbox, ObservedClock(settings.instance_id), ReplicaLink(client, outbox, status),
                          settings.primary_redis or "", LinkStatus(s.store.redis), settings.replica_auth_grace_s)


async def replication_link_of(store: EventStore) -> str:
    """`up` while the replica's Redis replicates the primary's (`master_link_status`), else `down`."""
    try:
        info = await server_info.replication(store.redis)
    except Exception:  # noqa: BLE001 - its own Redis unreachable: no link either
        return "down"
    return "up" if info.get("master_link_status") == "up" else "down"


async def replica_status(s: Services) -> dict[str, Any]:
    """The heartbeat a replica sends its primary: where its reads are, its lag, its link and URL."""
    last, projectors = await s.queries.stats.projectors()
    behind = await lag(s.store, last, projectors)
    return {**behind, "url": s.settings.public_url, "version": zhiyi_version(), "link": await replication_link_of(s.store)}
