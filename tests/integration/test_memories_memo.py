"""The vectors `prepare` embedded ahead may be evicted by the next batches' `prepare` while a batch is
being applied (a rebuild reads two batches ahead): the apply keeps what it found, it never fails."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from events.catalogue import MemoryCommitted, new_event
from projections.memories.projector import MemoriesProjector
from tests.hash_embedder import HashEmbedder


class SlowEmbedder(HashEmbedder):
    """Slow on m0's content: the apply that embeds it again is still waiting when the next prepare ends."""

    def embed(self, texts):
        time.sleep(0.6 if any(t.startswith("memory 0 ") for t in texts) else 0.05)
        return super().embed(texts)


def _commit(i: int):
    return new_event(MemoryCommitted(f"m{i}", f"memory {i} 记忆", "shared", "fact", "system_fact"), ns="shared",
                     agent="a")


async def test_an_apply_keeps_the_prepared_vectors_a_later_prepare_evicts(store, tmp_path: Path) -> None:
    await store.append([_commit(0), _commit(1)])
    await store.append([_commit(2)])
    events = await store.read(None, None, 10)
    a, b = events[:2], events[2:]
    embedder = SlowEmbedder(dim=16)
    p = MemoriesProjector(tmp_path / "m", embedder, memo_limit=1)
    try:
        await p.prepare(a)            # the memo keeps m1's vector only (limit 1)
        applying = asyncio.create_task(p.apply(a))   # embeds m0's again, slowly (in a thread)
        await asyncio.sleep(0.2)
        await p.prepare(b)            # meanwhile the next batch's prepare evicts m1's
        await applying
        await p.apply(b)
    finally:
        await p.close()
    reference = MemoriesProjector(tmp_path / "ref", HashEmbedder(dim=16))
    try:
        await reference.apply(events)
        fresh = MemoriesProjector(tmp_path / "m", HashEmbedder(dim=16))
        assert await fresh.digest() == await reference.digest()
        await fresh.close()
    finally:
        await reference.close()
