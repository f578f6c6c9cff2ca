"""Where a LAN replica's recall audits go: to its primary, as `recall_served` operations.

`gateway.http.audit.AuditWriter` appends batches of `recall.served` to an `EventStore`; a replica's
log is read-only, so its writer is given this sink instead. Each batch keeps the writer's key as its
operation id: a batch resent after a lost answer is answered `duplicate` by the primary (appended
once, under the replica's origin: the recall counts are per-origin G-counters). While the primary is
unreachable the writer keeps the batches (in memory, then spilled to the data dir) and retries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import structlog

from events.codec import payload_to_dict
from events.envelope import Event
from events.redis.store import AppendResult, Idempotency
from replicas.primary_client import PrimaryClient

log = structlog.get_logger(__name__)


@dataclass
class OpsSink:
    client: PrimaryClient

    async def append(self, events: Sequence[Event], *, idempotency: Idempotency | None = None,
                     **_: object) -> AppendResult:
        if idempotency is None:
            raise ValueError("a replica's audit batch needs its key")
        op = {"op_id": idempotency.key, "kind": "recall_served",
              "events": [{"ns": e.ns, "agent": e.agent, "by": e.by, "data": payload_to_dict(e.data)} for e in events]}
        answer = await self.client.push([op], None)
        result = next((r for r in answer.get("results", []) if r.get("op_id") == idempotency.key), None)
        if result is None:
            raise RuntimeError(f"the primary did not answer audit batch {idempotency.key}")
        if result["status"] == "rejected":   # malformed for the primary: keeping it would block the rest
            log.error("replica.audit_rejected", key=idempotency.key, error=result.get("error"))
        position = result.get("position", "")
        return AppendResult([position] if position else [], result["status"] == "duplicate")

    async def release(self, idempotency: Idempotency) -> None:
        """Nothing to release: the primary keeps the operation's record for its idempotency window."""
