"""`replay --verify` on a log of 10k mixed events (commits, batches, deletes, recalls, registrations)."""

from __future__ import annotations

import random

import pytest

from commands.handlers import CommandService
from commands.model import DeleteMemory, Limits, RegisterAgent
from commands.parsing import parse_batch, parse_commit
from events.catalogue import RecallServed, new_event
from tests.hash_embedder import HashEmbedder
from projections.core.registry import make_projectors
from projections.core.replay import verify
from projections.core.runner import ProjectionRunner

pytestmark = pytest.mark.slow  # ~15 s


async def test_verify_passes_on_10k_mixed_events(store, tmp_path):
    rng = random.Random(3)
    service = CommandService(store, Limits())
    agents = [f"agent{i}" for i in range(5)]
    for a in agents:
        await service.register_agent(RegisterAgent(a))
    ids: list[str] = []
    while await store.length() < 10_000:
        actor = await service.require_actor(rng.choice(agents))
        roll = rng.random()
        if roll < 0.5:
            entries = [{"content": f"fact {rng.randrange(10**6)} 内容 {rng.randrange(100)}",
                        "namespace": rng.choice(["shared", actor.main_namespace]),
                        "tags": [rng.choice(["a", "b", "标签"])]} for _ in range(rng.randint(1, 50))]
            done = await service.batch_commit(actor, parse_batch({"entries": entries}, Limits()))
            ids.extend(m for m, _ in done.results)
        elif roll < 0.7:
            done = await service.commit(actor, parse_commit({"content": f"single {rng.random()}"}, Limits()))
            ids.append(done.memory_id)
        elif roll < 0.85 and ids:
            victim = ids.pop(rng.randrange(len(ids)))
            idx = await store.memory_index(victim)
            owner = await service.require_actor(idx.agent)
            await service.delete(owner, DeleteMemory(victim))
        else:
            await store.append([new_event(RecallServed("q", (actor.main_namespace, "shared"),
                                                       tuple(ids[-3:]), (0.9, 0.8, 0.7)[:len(ids[-3:])]),
                                          ns=actor.main_namespace, agent=actor.agent_id)])
    embedder = HashEmbedder(dim=32)
    live_dir = tmp_path / "live"
    for p in make_projectors(live_dir, embedder):
        runner = ProjectionRunner(store, p, publish=False)
        await runner.catch_up()
        assert runner.events_applied >= 10_000
        await p.close()
    report = await verify(store, live_dir, tmp_path / "scratch", embedder)
    assert report.ok, report.mismatches
    assert len(report.rebuilds) == 2
    assert all(r["memories"].digest == report.live["memories"].digest for r in report.rebuilds)
