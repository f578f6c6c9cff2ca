"""The write-side indexes as `events.redis.store.EventStore` reads (and rebuilds) them: what a command
checks without waiting for a projection (a memory's version, an agent's key, an episode's fingerprint,
a namespace's owner, a replica's key). The store inherits this; the records are `events.redis.indexes`'."""

from __future__ import annotations

from typing import AsyncIterator, Callable, Sequence

import structlog
from redis.asyncio import Redis

from events.envelope import Event
from events.redis import keys
from events.redis.indexes import AgentIndex, MemoryIndex, index_ops, memory_index_of
from events.redis.replies import as_str, hash_to_str

log = structlog.get_logger(__name__)


class WriteSideIndexes:
    """What `EventStore` provides to the index reads (declared here for the type checker)."""

    redis: Redis
    iterate: Callable[..., AsyncIterator[list[Event]]]

    async def memory_index(self, memory_id: str) -> MemoryIndex | None:
        h = hash_to_str(await self.redis.hgetall(keys.memory(memory_id)))
        if not h:
            return None
        return memory_index_of(memory_id, h)

    async def memory_indexes(self, memory_ids: Sequence[str]) -> dict[str, MemoryIndex]:
        if not memory_ids:
            return {}
        pipe = self.redis.pipeline(transaction=False)
        for mid in memory_ids:
            pipe.hgetall(keys.memory(mid))
        found: dict[str, MemoryIndex] = {}
        for mid, raw in zip(memory_ids, await pipe.execute()):
            h = hash_to_str(raw)
            if h:
                found[mid] = memory_index_of(mid, h)
        return found

    async def log_epoch_and_keys_version(self) -> tuple[str | None, str | None]:
        """The log's epoch (`EventStore.log_epoch`) and the agent keys' version (keys.AGENT_KEYS_VERSION;
        None: no key written since the index was built), in one round trip."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.get(keys.EPOCH)
        pipe.hget(keys.AGENT_KEYS, keys.AGENT_KEYS_VERSION)
        epoch, version = await pipe.execute()
        return (as_str(epoch) if epoch is not None else None), (as_str(version) if version is not None else None)

    async def agent_for_key_hash(self, key_hash: str) -> str | None:
        """The agent holding this key (None: no agent, or a rotated or revoked key: its hash maps to "")."""
        val = await self.redis.hget(keys.AGENT_KEYS, key_hash)
        return (as_str(val) or None) if val is not None else None

    async def agent_index(self, agent_id: str) -> AgentIndex | None:
        h = hash_to_str(await self.redis.hgetall(keys.agent(agent_id)))
        if not h:
            return None
        return AgentIndex(agent_id, h.get("main", ""), h.get("ephemeral", ""), h.get("type", ""), h.get("key", ""))

    async def episode_fingerprints(self, episodes: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
        """The stored fingerprint of each (namespace, episode id) already committed; absent ones are left out."""
        if not episodes:
            return {}
        pipe = self.redis.pipeline(transaction=False)
        for ns, episode_id in episodes:
            pipe.hget(keys.episode(ns, episode_id), "fp")
        return {pair: as_str(fp) for pair, fp in zip(episodes, await pipe.execute()) if fp is not None}

    async def session_members(self, namespace: str, session_id: str) -> list[str]:
        """The memories committed into `namespace` under `session_id` (forgotten ones too)."""
        return sorted(as_str(m) for m in await self.redis.hkeys(keys.session(namespace, session_id)))

    async def replica_key_hash(self, instance_id: str) -> str | None:
        """The sha256 of the replica key issued for `instance_id` (None: none issued)."""
        val = await self.redis.hget(keys.replica(instance_id), "key")
        return as_str(val) if val is not None else None

    async def namespace_owner(self, namespace: str) -> str | None:
        val = await self.redis.hget(keys.NAMESPACE_OWNERS, namespace)
        return as_str(val) if val is not None else None

    async def rebuild_indexes(self) -> int:
        """Drop and rebuild every write-side index from the log. Returns events folded."""
        pipe = self.redis.pipeline(transaction=False)
        for pattern in keys.INDEX_PATTERNS:
            async for k in self.redis.scan_iter(match=pattern, count=1000):
                pipe.delete(k)
        pipe.delete(keys.AGENT_KEYS, keys.NAMESPACE_OWNERS)
        await pipe.execute()
        n = 0
        async for chunk in self.iterate():
            pipe = self.redis.pipeline(transaction=False)
            for ev in chunk:
                for op in index_ops(ev):
                    pipe.hset(op.key, mapping=op.mapping)  # type: ignore[arg-type]  # redis-py: Mapping keys invariant
            await pipe.execute()
            n += len(chunk)
        log.info("indexes.rebuilt", events=n)
        return n
