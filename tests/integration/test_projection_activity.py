"""The activity projection: recall counts per memory, counted once per event whatever the batching
or redelivery, per-origin high-water, and the same digest however the events arrive."""

from __future__ import annotations

from pathlib import Path

from events.catalogue import RecallServed, new_event
from projections.activity import ActivityProjector
from projections.queries.activity import ActivityReader
from projections.runner import ProjectionRunner


def served(*ids: str):
    return new_event(RecallServed("q", ("shared",), ids, tuple(0.5 for _ in ids)), ns="shared", agent="alice")


async def test_counts_once_per_event_and_digests_agree(store, tmp_path: Path) -> None:
    await store.append([served("a", "b"), served("a"), served("c", "a", "a")])
    one = ActivityProjector(tmp_path / "one")
    await ProjectionRunner(store, one, publish=False, batch_size=1).catch_up()
    events = await store.read()
    await one.apply(events)  # redelivered: nothing changes
    two = ActivityProjector(tmp_path / "two")
    await ProjectionRunner(store, two, publish=False, batch_size=10).catch_up()
    assert await one.digest() == await two.digest()
    reader = ActivityReader(tmp_path / "one")
    counts = reader.recalls(["a", "b", "c", "never"])
    assert {k: v[0] for k, v in counts.items()} == {"a": 3, "b": 1, "c": 1}  # a listed twice in one recall: once
    assert counts["a"][1].endswith("Z") and "never" not in counts
    assert ActivityReader(tmp_path / "missing").recalls(["a"]) == {}
    reader.close()
    await one.close()
    await two.close()


async def test_another_origin_counts_separately_and_its_redeliveries_do_not(store, tmp_path: Path) -> None:
    p = ActivityProjector(tmp_path)
    local = (await store.append([served("a")])).position
    ev = (await store.read())[0]
    remote = ev.placed(position="1-0", hlc=ev.hlc, origin="replica-b")  # an older position, another origin
    await p.apply([ev, remote])
    reader = ActivityReader(tmp_path)
    assert reader.recalls(["a"])["a"][0] == 2  # each origin's G-counter
    assert await p.load_checkpoint() == local  # the checkpoint never moves back
    later = ev.placed(position="9999999999999-0", hlc=ev.hlc, origin="replica-b")
    await p.apply([later, remote.placed(position="9999999999999-1", hlc=ev.hlc, origin="replica-c"),
                   ev.placed(position="9999999999999-2", hlc=ev.hlc, origin="replica-b")])
    assert reader.recalls(["a"])["a"][0] == 5
    await p.apply([later])  # redelivered: at the checkpoint, nothing counts
    assert reader.recalls(["a"])["a"][0] == 5
    reader.close()
    await p.close()
