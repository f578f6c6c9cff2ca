"""Write-side indexes the gateway reads without waiting for a projection.

They are derived from events exactly like projections (the append script applies
`index_ops(event)` in the same atomic step as the XADD), so they can be rebuilt from the log.
"""

from __future__ import annotations

from dataclasses import dataclass

from events.redis import keys
from events.catalogue import (
    AgentKeyRevoked, AgentKeyRotated, AgentRegistered, EpisodeCommitted, MemoryCommitted, MemoryCorrected, MemoryDeleted, MemoryDeprecated, MemoryForgotten,
    MemoryMarkedStale, MemoryMerged, MemoryQualityDropped, MemoryQualityRecovered, MemoryUnmerged, ReplicaRegistered,
)
from events.envelope import Event


@dataclass(frozen=True, slots=True)
class MemoryIndex:
    """A memory's write-side index (what an append checks and a command decides on)."""

    memory_id: str
    version: int
    namespace: str
    agent: str
    deleted: bool
    merged_into: str = ""


@dataclass(frozen=True, slots=True)
class AgentIndex:
    """An agent's write-side index: its namespaces and its key's hash."""

    agent_id: str
    main_namespace: str
    ephemeral_namespace: str
    agent_type: str
    key_hash: str


def memory_index_of(memory_id: str, h: dict[str, str]) -> MemoryIndex:
    """The index record of a memory's index hash (`keys.memory`)."""
    return MemoryIndex(memory_id, int(h.get("version", "0")), h.get("ns", ""), h.get("agent", ""),
                       h.get("deleted") == "1", h.get("merged_into", ""))


@dataclass(frozen=True, slots=True)
class HSet:
    key: str
    mapping: dict[str, str]


@dataclass(frozen=True, slots=True)
class Guard:
    """Append precondition: `field` of hash `key` equals `expected` (None: must be absent).

    `next_version`: the field only has to hold an integer; the one event appended was decided at
    version `expected` (its payload carries expected+1) and gets actual+1 instead when another write
    moved the field meanwhile (append.lua mode '+')."""

    key: str
    field: str
    expected: str | None
    next_version: bool = False

    @property
    def mode(self) -> str:
        return "+" if self.next_version else "!" if self.expected is None else "="

    @classmethod
    def memory_version(cls, memory_id: str, version: int) -> "Guard":
        return cls(keys.memory(memory_id), "version", str(version))

    @classmethod
    def memory_next_version(cls, memory_id: str, version: int) -> "Guard":
        """The memory's next version, whatever it is when the append runs (decided at `version`)."""
        return cls(keys.memory(memory_id), "version", str(version), next_version=True)

    @classmethod
    def memory_live(cls, memory_id: str) -> "Guard":
        return cls(keys.memory(memory_id), "deleted", "0")

    @classmethod
    def episode_absent(cls, namespace: str, episode_id: str) -> "Guard":
        return cls(keys.episode(namespace, episode_id), "fp", None)

    @classmethod
    def absent(cls, key: str, field: str) -> "Guard":
        return cls(key, field, None)


def index_ops(event: Event) -> list[HSet]:
    d = event.data
    if isinstance(d, MemoryCommitted):
        ops = [HSet(keys.memory(d.memory_id), {"version": "1", "ns": d.namespace, "agent": event.agent, "deleted": "0"})]
        if d.session_id:
            ops.append(HSet(keys.session(d.namespace, d.session_id), {d.memory_id: "1"}))
        return ops
    if isinstance(d, (MemoryDeleted, MemoryForgotten)):
        return [HSet(keys.memory(d.memory_id), {"version": str(d.version), "deleted": "1"})]
    if isinstance(d, (MemoryCorrected, MemoryDeprecated, MemoryMarkedStale)):
        return [HSet(keys.memory(d.memory_id), {"version": str(d.version)})]
    if isinstance(d, (MemoryMerged, MemoryUnmerged)):  # where a merged memory went, for unmerge
        into = d.merged_into if isinstance(d, MemoryMerged) else ""
        return [HSet(keys.memory(d.memory_id), {"version": str(d.version), "merged_into": into})]
    if isinstance(d, (MemoryQualityDropped, MemoryQualityRecovered)):  # the open notice, for the quality policy
        return [HSet(keys.memory(d.memory_id), {"notice": "1" if isinstance(d, MemoryQualityDropped) else "0"})]
    if isinstance(d, EpisodeCommitted):
        return [HSet(keys.episode(d.namespace, d.episode_id), {"fp": d.fingerprint, "agent": event.agent})]
    # every write of AGENT_KEYS changes its AGENT_KEYS_VERSION (to a value no other write gives it: a new
    # key's hash, or a withdrawn one's marked)
    if isinstance(d, AgentKeyRotated):    # the old hash maps to nobody ("" is no agent): refused at once
        withdrawn = {d.previous_hash: ""} if d.previous_hash else {}      # none after a revocation
        return [HSet(keys.agent(d.agent_id), {"key": d.key_hash}),
                HSet(keys.AGENT_KEYS, {**withdrawn, d.key_hash: d.agent_id, keys.AGENT_KEYS_VERSION: d.key_hash})]
    if isinstance(d, AgentKeyRevoked):
        return [HSet(keys.agent(d.agent_id), {"key": ""}),
                HSet(keys.AGENT_KEYS, {d.previous_hash: "", keys.AGENT_KEYS_VERSION: "-" + d.previous_hash})]
    if isinstance(d, ReplicaRegistered):
        return [HSet(keys.replica(d.instance_id), {"key": d.key_hash})]
    if isinstance(d, AgentRegistered):
        return [
            HSet(keys.agent(d.agent_id), {"main": d.main_namespace, "ephemeral": d.ephemeral_namespace,
                                          "type": d.agent_type, "key": d.key_hash}),
            HSet(keys.AGENT_KEYS, {d.key_hash: d.agent_id, keys.AGENT_KEYS_VERSION: d.key_hash}),
            HSet(keys.NAMESPACE_OWNERS, {d.main_namespace: d.agent_id, d.ephemeral_namespace: d.agent_id}),
        ]
    return []
