"""Random sequences of commands give the same projection digest live and after replay."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commands.errors import CommandError
from commands.handlers import CommandService
from commands.model import DeleteMemory, IdempotencyRequest, Limits, RegisterAgent
from commands.parsing import parse_batch, parse_commit
from events.redis.client import connect
from events.redis.store import EventStore
from tests.hash_embedder import HashEmbedder
from projections.core.registry import make_projectors
from projections.core.replay import live_digests, rebuild
from projections.core.runner import ProjectionRunner

AGENTS = ["alice", "bob"]
TEXTS = ["nginx listens on 8080", "用户偏好：结论先行", "backups at 03:00", "GPU: RTX 3050", "端口 8189",
         "deploy needs the nginx config", "the cache TTL is one hour"]

commit_op = st.tuples(st.just("commit"), st.sampled_from(AGENTS), st.sampled_from(TEXTS),
                      st.sampled_from([None, "shared", "own-ephemeral"]), st.sampled_from([None, "k1", "k2"]))
batch_op = st.tuples(st.just("batch"), st.sampled_from(AGENTS), st.lists(st.sampled_from(TEXTS), min_size=1,
                                                                          max_size=4))
delete_op = st.tuples(st.just("delete"), st.sampled_from(AGENTS), st.integers(0, 30),
                      st.sampled_from([None, 1, 2]))
project_op = st.tuples(st.just("project"))  # let the live projector catch up mid-sequence
ops = st.lists(st.one_of(commit_op, commit_op, batch_op, delete_op, project_op), min_size=1, max_size=25)


async def _run(redis_url: str, sequence: list, root: Path) -> None:
    redis = connect(redis_url)
    await redis.flushall()
    store = EventStore(redis, origin="prop")
    service = CommandService(store, Limits())
    embedder = HashEmbedder(dim=16)
    live = make_projectors(root / "live", embedder)
    runners = [ProjectionRunner(store, p, publish=False) for p in live]
    ids: list[str] = []
    try:
        for agent in AGENTS:
            await service.register_agent(RegisterAgent(agent))
        for op in sequence:
            try:
                if op[0] == "commit":
                    _, agent, text, ns, key = op
                    actor = await service.require_actor(agent)
                    body = {"content": text}
                    if ns == "shared":
                        body["namespace"] = "shared"
                    elif ns == "own-ephemeral":
                        body["namespace"] = f"{agent}-ephemeral"
                    idem = IdempotencyRequest(key, f"fp-{text}-{ns}") if key else None
                    ids.append((await service.commit(actor, parse_commit(body, Limits()), idem)).memory_id)
                elif op[0] == "batch":
                    actor = await service.require_actor(op[1])
                    done = await service.batch_commit(actor, parse_batch({"entries": [{"content": t} for t in op[2]]},
                                                                         Limits()))
                    ids.extend(mid for mid, _ in done.results)
                elif op[0] == "delete" and ids:
                    actor = await service.require_actor(op[1])
                    await service.delete(actor, DeleteMemory(ids[op[2] % len(ids)], op[3]))
                elif op[0] == "project":
                    for r in runners:
                        await r.catch_up()
            except CommandError:
                pass  # refused commands append nothing; that is part of what is being tested
        for r in runners:
            await r.catch_up()
        for p in live:
            await p.close()
        live_d = await live_digests(root / "live", embedder)
        rebuilt = await rebuild(store, root / "rebuilt", embedder)
        for name, d in live_d.items():
            assert rebuilt[name].digest == d.digest, name
            assert rebuilt[name].position == d.position
        # the write-side indexes are derived state too: rebuilding them gives the same answers
        before = {i: await store.memory_index(i) for i in ids}
        await store.rebuild_indexes()
        assert {i: await store.memory_index(i) for i in ids} == before
    finally:
        await redis.aclose()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=ops)
def test_live_projection_equals_replay_for_random_command_sequences(redis_url, sequence):
    root = Path(tempfile.mkdtemp(prefix="zhiyi-prop-"))
    try:
        asyncio.run(_run(redis_url, sequence, root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
