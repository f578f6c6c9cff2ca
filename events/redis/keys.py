"""Every Redis key name zhiyi uses, in one place."""

from __future__ import annotations

PREFIX = "zhiyi:"

STREAM = PREFIX + "events"
"""The log: every event, in order. Never trimmed by the product."""

EPOCH = PREFIX + "epoch"
"""The log's identity: a random id created with the log (or adopted by a log written before epochs
existed). Every append names the epoch it expects; projections record the one they were folded from,
so a log wiped or replaced under a running zhiyi is noticed (`log_reset`), never silently restarted."""

HLC_STATE = PREFIX + "hlc"
"""Hash {w, c}: the last wall ms and counter handed out by the append script."""

CHECKPOINTS = PREFIX + "checkpoints"
"""Hash projector name -> last applied position (published by the projection runner)."""

GENERATIONS = PREFIX + "generations"
"""Hash '<projector>:<namespace>' -> position of the last applied event that can change what reads
of that namespace return ('*' = every namespace). Published by the runner with the checkpoint;
`recall.served` never raises it. Search-cache keys include these, so a cached answer is never
older than a write it could miss."""

AGENT_KEYS = PREFIX + "agent-keys"
"""Hash sha256(api key) -> agent id. Write-side index, rebuilt by replay."""
AGENT_KEYS_VERSION = "~version"
"""A field of AGENT_KEYS that every write of it changes (key hashes are hex): a gateway caches the agent of
a key while the version it read with the log's epoch (one round trip for many requests) is the same."""

NAMESPACE_OWNERS = PREFIX + "ns-owners"
"""Hash namespace -> owning agent id (main and ephemeral namespaces). Write-side index."""

HEARTBEAT_PREFIX = PREFIX + "heartbeat:"

INSTANCES = PREFIX + "instances"
"""Hash "<instance id>:<role>" -> the instance's last record (events.redis.instances)."""

REACTIONS_GROUP = "reactions"
"""The consumer group on STREAM that reaction workers share (each event is handled by one worker)."""

REACTIONS_DEAD = PREFIX + "reactions:dead"
"""Stream of (position, policy, error, deliveries) for events a reaction failed on too often."""


def agent(agent_id: str) -> str:
    """Hash of one registered agent: main, ephemeral, type, key."""
    return f"{PREFIX}agent:{agent_id}"


def memory(memory_id: str) -> str:
    """Hash of one memory's write-side index: version, ns, agent, deleted."""
    return f"{PREFIX}mem:{memory_id}"


def idempotency(scope: str, key: str) -> str:
    """Hash {f: fingerprint, r: result, p: positions} kept for the idempotency window."""
    return f"{PREFIX}idem:{scope}:{key}"


def generation(projector: str, namespace: str) -> str:
    """A field of GENERATIONS."""
    return f"{projector}:{namespace}"


def recall_cache(digest: str) -> str:
    """One cached recall answer (a string with a TTL), keyed by the digest of its inputs."""
    return f"{PREFIX}cache:recall:{digest}"


def heartbeat(instance_id: str, role: str) -> str:
    """One process's heartbeat (a string with a TTL; events.redis.instances)."""
    return f"{HEARTBEAT_PREFIX}{instance_id}:{role}"


def episode(namespace: str, episode_id: str) -> str:
    """Hash of one episode's write-side index: fp (the fingerprint of its body), agent. Namespaces
    hold no ':', so the key is unique for every (namespace, id)."""
    return f"{PREFIX}ep:{namespace}:{episode_id}"


INDEX_PATTERNS = (PREFIX + "agent:*", PREFIX + "mem:*", PREFIX + "ep:*", PREFIX + "replica:*", PREFIX + "session:*")
"""Patterns of the per-entity write-side index keys (for rebuilding them)."""


def session(namespace: str, session_id: str) -> str:
    """Hash of one ephemeral session's memories: memory id -> "1" (closing the session forgets them)."""
    return f"{PREFIX}session:{namespace}:{session_id}"


def replica(instance_id: str) -> str:
    """Hash of one LAN replica's write-side index: key (the sha256 of its replica key)."""
    return f"{PREFIX}replica:{instance_id}"


def rate_bucket(agent_id: str, kind: str) -> str:
    """One agent's token bucket of `kind` (read | write): a hash {tokens, ts} (events.redis.rate_buckets)."""
    return f"{PREFIX}rate:{agent_id}:{kind}"


def validator_partials(memory_id: str) -> str:
    """Sorted set of the commits that partially overlapped a memory (PassiveValidator P3)."""
    return f"{PREFIX}validator:p3:{memory_id}"


LLM_CALLS_PREFIX = PREFIX + "llm:calls:"
"""+ UTC date (YYYY-MM-DD): the LLM calls made that day (a counter expiring after two days)."""


def llm_calls(day: str, budget: str = "") -> str:
    """The LLM call counter of one UTC day ("2026-12-03") for one budget ("" = the general one, used by
    entity extraction; "distill" = distillation's own)."""
    return LLM_CALLS_PREFIX + (f"{budget}:" if budget else "") + day


def lease(name: str) -> str:
    """A lease one instance holds while it runs `name` (e.g. the triggers): a string with a TTL."""
    return f"{PREFIX}lease:{name}"
