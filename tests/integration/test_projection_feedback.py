"""Feedback through the memories projector (real Redis log, real LanceDB): one vote per agent, its
latest; the counts, quality, importance halving, quality notice, quality deadline and quality_low
forget rule all read the counts derived from the votes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from commands.reactions.quality import QualityNoticePolicy
from events.catalogue import MemoryFeedback, MemoryQualityDropped, new_event
from events.envelope import Event
from events.redis.counters import Counters
from projections.core import checkpoint as checkpoint_file
from projections.core.errors import RebuildRequired
from tests.hash_embedder import HashEmbedder
from projections.memories.projector import MemoriesProjector
from commands.rules.forgetting import choose
from commands.rules.time_rules import quality_deadline, quality_low
from projections.memories.reader import MemoriesReader
from tests.integration.test_projection_memories import append, commit

NS = "alice-main"
DAY_MS = 86_400_000
NOTICE = "2026-01-01T00:00:00Z"     # a quality notice raised then...
NOTICE_MS = 1_767_225_600_000       # ...at this epoch ms


def vote(agent: str, verdict: str, mid: str = "m1") -> Event:
    return new_event(MemoryFeedback(mid, NS, verdict, ""), ns=NS, agent=agent)


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder(dim=16)


async def _project(store, tmp_path: Path, embedder, *events: Event) -> tuple[dict, Event]:
    evs = await append(store, commit("m1", "the release checklist lives in docs/release.md", ns=NS), *events)
    p = MemoriesProjector(tmp_path, embedder)
    await p.apply(evs)
    await p.close()
    row = MemoriesReader(tmp_path).get("m1")
    assert row is not None
    return row, evs[-1]


def _counts(row: dict) -> tuple[int, int, float, float]:
    return row["useful_count"], row["not_useful_count"], round(row["quality_score"], 6), row["importance"]


async def test_one_agents_repeated_and_changed_votes_count_once(store, redis, tmp_path: Path, embedder) -> None:
    row, last = await _project(store, tmp_path, embedder,
                               *[vote("mallory", "not_useful") for _ in range(6)],
                               vote("bob", "useful"), vote("bob", "not_useful"), vote("carol", "useful"))
    assert _counts(row) == (1, 2, round(1 / 3, 6), 1.0)   # carol; mallory once, bob's latest
    assert not quality_low(row)
    assert choose([row]) == []
    assert quality_deadline([{**row, "quality_notice_at": NOTICE}], NOTICE_MS + 30 * DAY_MS) == []
    policy = QualityNoticePolicy(MemoriesReader(tmp_path), Counters(redis))
    assert await policy.decide(last) == []


async def test_five_agents_votes_lower_quality(store, redis, tmp_path: Path, embedder) -> None:
    voters = [f"agent-{i}" for i in range(5)]
    row, last = await _project(store, tmp_path, embedder, *[vote(a, "not_useful") for a in voters for _ in range(2)])
    assert _counts(row) == (0, 5, 0.0, 0.5)               # < 0.3 with 5 votes: importance x 0.5 at once
    assert quality_low(row)
    assert [(c.memory_id, c.reason) for c in choose([row])] == [("m1", "quality_low")]
    noticed = {**row, "quality_notice_at": NOTICE}
    assert [d.memory_id for d in quality_deadline([noticed], NOTICE_MS + 8 * DAY_MS)] == ["m1"]
    [event] = await QualityNoticePolicy(MemoriesReader(tmp_path), Counters(redis)).decide(last)
    assert isinstance(event.data, MemoryQualityDropped)
    assert (event.data.memory_id, event.data.feedback) == ("m1", 5)


async def test_a_projection_built_before_per_agent_votes_requires_a_rebuild(store, tmp_path: Path,
                                                                             embedder) -> None:
    await _project(store, tmp_path, embedder, vote("bob", "useful"))
    ck = checkpoint_file.load(tmp_path)
    assert ck is not None
    checkpoint_file.save(tmp_path, replace(ck, meta={**ck.meta, "schema": 4}))   # before per-agent votes
    with pytest.raises(RebuildRequired, match="rebuild it from the log"):
        await MemoriesProjector(tmp_path, embedder).load_checkpoint()
