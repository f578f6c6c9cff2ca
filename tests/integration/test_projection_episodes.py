"""The episodes projector against a real Redis log and a real LanceDB table in tmp_path: an episode is
immutable (the first commit wins), its distill_status moves pending -> processing -> completed (or
skipped) in one batch or across batches, with the same rows and digest either way; and its reader."""

from __future__ import annotations

from pathlib import Path

from events.catalogue import EpisodeCommitted, EpisodeDistillationStarted, EpisodeDistilled, new_event
from events.envelope import Event
from projections.episodes.projector import EpisodesProjector
from projections.episodes.reader import EpisodesReader, episode_view

TURNS = ({"role": "user", "content": "my port is 8189"}, {"role": "assistant", "content": "noted"})


def committed(eid: str, ns: str = "alice-main", kind: str = "conversation") -> Event:
    return new_event(EpisodeCommitted(eid, ns, kind, "ok", TURNS, "fp"), ns=ns, agent="alice")


def started(eid: str, ns: str = "alice-main") -> Event:
    return new_event(EpisodeDistillationStarted(eid, ns, "llm:m"), ns=ns, agent="alice", by="reaction")


def distilled(eid: str, ns: str = "alice-main", status: str = "completed", ids: tuple[str, ...] = ("m1", "m2"),
              reason: str = "") -> Event:
    return new_event(EpisodeDistilled(eid, ns, status, ids, "llm:m", reason, 0.5), ns=ns, agent="alice", by="reaction")


async def _fold(tmp_path: Path, name: str, stored: list[Event], batches: list[int]) -> tuple[str, list]:
    projector = EpisodesProjector(tmp_path / name)
    start = 0
    for size in batches:
        await projector.apply(stored[start:start + size])
        start += size
    digest = await projector.digest()
    await projector.close()
    reader = EpisodesReader(tmp_path / name)
    try:
        rows = [await reader.get("alice-main", e) for e in ("a", "b", "c")] + [await reader.get("shared", "a")]
    finally:
        reader.close()
    return digest, rows


async def test_status_moves_and_episodes_stay_immutable(store, tmp_path: Path) -> None:
    events = [committed("a"), committed("b"), committed("a", kind="task"), started("a"), committed("a", "shared"),
              distilled("a"), distilled("b", status="skipped", ids=(), reason="chit_chat"), started("b"),
              distilled("zz")]
    res = await store.append(events)
    stored = [await store.get(p) for p in res.positions]
    digest, rows = await _fold(tmp_path, "one", stored, [len(stored)])
    a, b, c, shared_a = rows
    assert c is None and shared_a is not None and shared_a["distill_status"] == "pending"
    view = episode_view(a)
    assert view["kind"] == "conversation" and view["turns"] == list(TURNS)       # the first commit wins
    assert (view["distill_status"], view["distilled_to"], view["extractor"]) == ("completed", ["m1", "m2"], "llm:m")
    assert view["started_at"] and view["distilled_at"] and view["position"] == a["committed_position"]
    assert (b["distill_status"], b["reason"], list(b["distilled_to"])) == ("skipped", "chit_chat", [])  # settled
    # the same events folded one by one give the same rows
    again, rows_again = await _fold(tmp_path, "two", stored, [1] * len(stored))
    assert again == digest
    assert [episode_view(r) if r else None for r in rows_again] == [episode_view(r) if r else None for r in rows]


async def test_the_reader_lists_the_llm_queue_oldest_first(store, tmp_path: Path) -> None:
    res = await store.append([committed("a"), committed("b"), committed("c"), started("b"), started("a"),
                              started("c"), distilled("c")])
    projector = EpisodesProjector(tmp_path / "q")
    await projector.apply([await store.get(p) for p in res.positions])
    await projector.close()
    reader = EpisodesReader(tmp_path / "q")
    try:
        assert [r["episode_id"] for r in await reader.processing()] == ["b", "a"]
        assert await reader.counts() == {"pending": 0, "processing": 2, "completed": 1, "skipped": 0}
        assert await EpisodesReader(tmp_path / "nothing").get("alice-main", "a") is None
    finally:
        reader.close()
