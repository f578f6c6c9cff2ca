"""An agent's key changing after registration (seed 2.7; registered in `events.catalogue`, which
re-exports them). Each holds sha256 hashes only, never a key."""

from __future__ import annotations

from dataclasses import dataclass

from events.catalogue import event_type


@event_type("agent.key_rotated")
@dataclass(frozen=True, slots=True)
class AgentKeyRotated:
    """The agent's key was replaced: `key_hash` works from now on, `previous_hash` no more."""

    agent_id: str
    key_hash: str
    previous_hash: str


@event_type("agent.key_revoked")
@dataclass(frozen=True, slots=True)
class AgentKeyRevoked:
    """The agent's key was withdrawn: no key works for it until one is rotated in (the admin key can
    still act for it)."""

    agent_id: str
    previous_hash: str
