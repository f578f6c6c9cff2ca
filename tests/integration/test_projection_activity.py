"""The activity projection: recall counts per memory, counted once per event whatever the batching
or redelivery, per-origin high-water, and the same digest however the events arrive."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from events import positions
from events.catalogue import RecallServed, new_event
from projections.activity.projector import ActivityProjector
from projections.activity.reader import BOUNDS_SQL, ActivityReader, RecallCounts
from projections.core.runner import ProjectionRunner


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


async def test_a_batch_folded_at_once_equals_its_events_folded_one_by_one(store, tmp_path: Path) -> None:
    """The batch's recalls are summed per (memory, origin) before one upsert each: the same counts, last
    times and high-water marks as one event at a time, two origins mixed."""
    await store.append([served("a", "b", "a"), served("b", "c"), served("a")])
    local = await store.read()
    remote = [e.placed(position=f"{e.position.split('-')[0]}-{9 + i}", hlc=e.hlc, origin="replica-b")
              for i, e in enumerate(local[:2])]
    batch = sorted([*local, *remote], key=lambda e: positions.key(e.position))
    together = ActivityProjector(tmp_path / "together")
    await together.apply(batch)
    alone = ActivityProjector(tmp_path / "alone")
    for e in batch:
        await alone.apply([e])
    assert await together.digest() == await alone.digest()
    reader = ActivityReader(tmp_path / "together")
    assert {k: v[0] for k, v in reader.recalls(["a", "b", "c"]).items()} == {"a": 3, "b": 4, "c": 2}
    reader.close()
    await together.close()
    await alone.close()


async def test_recall_counts_in_memory_follow_the_projection_by_change_numbers(tmp_path: Path) -> None:
    p = ActivityProjector(tmp_path)
    reader = ActivityReader(tmp_path)
    counts = RecallCounts(reader, max_age_s=3600)
    assert counts.recalls(["a"]) == {} and not counts.loaded  # no database yet: reads through
    await p.apply([served("a", "b").placed(position="1-0", hlc="1:0:n", origin="local")])
    await counts.refresh()
    assert counts.loaded and {k: v[0] for k, v in counts.recalls(["a", "b", "c"]).items()} == {"a": 1, "b": 1}
    await p.apply([served("a", "c").placed(position="2-0", hlc="2:0:n", origin="local")])
    assert counts.recalls(["a"])["a"][0] == 1        # not refreshed yet (max_age): the older total
    changed, latest = reader.changed_since(counts._change)
    assert set(changed) == {"a", "c"} and latest == 4  # only the memories the new batch touched (numbers 3, 4)
    await counts.refresh()
    got = counts.recalls(["a", "b", "c"])
    assert {k: v[0] for k, v in got.items()} == {"a": 2, "b": 1, "c": 1}
    assert got == reader.recalls(["a", "b", "c"])     # the same totals as an exact read
    await counts.close()
    reader.close()
    await p.close()


async def test_the_change_bounds_are_two_seeks_not_a_scan(tmp_path: Path) -> None:
    """Every refresh of the gateway's recall counts reads the first and last change numbers: one
    `MIN(x), MAX(x)` query scans the whole table (7 ms at 100k memories), two subqueries seek."""
    p = ActivityProjector(tmp_path)
    await p.apply([served("a", "b").placed(position="1-0", hlc="1:0:n", origin="local")])
    await p.close()
    conn = sqlite3.connect(tmp_path / "activity.db")
    plan = " | ".join(row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + BOUNDS_SQL))
    assert "SCAN recall_changes" not in plan and plan.count("SEARCH recall_changes") == 2, plan
    assert conn.execute(BOUNDS_SQL).fetchone() == (1, 2)
    conn.close()


async def test_recall_counts_start_over_when_the_projection_is_rebuilt(tmp_path: Path) -> None:
    first = ActivityProjector(tmp_path / "db")
    for i in range(3):
        await first.apply([served("a").placed(position=f"{i + 1}-0", hlc=f"{i + 1}:0:n", origin="local")])
    await first.close()
    reader = ActivityReader(tmp_path / "db")
    counts = RecallCounts(reader, max_age_s=3600)
    await counts.refresh()
    assert counts.recalls(["a"])["a"][0] == 3
    reader.close()
    (tmp_path / "db" / "activity.db").unlink()   # rebuilt from the log: change numbers start again
    again = ActivityProjector(tmp_path / "db")
    await again.apply([served("b").placed(position="1-0", hlc="1:0:n", origin="local")])
    await counts.refresh()      # latest change 1 < 3: dropped, reads through until reloaded
    assert not counts.loaded and set(counts.recalls(["a", "b"])) == {"b"}
    await counts.refresh()
    assert counts.loaded and set(counts.recalls(["a", "b"])) == {"b"}
    await counts.close()
    reader.close()
    await again.close()


def _old_database(path: Path, version: int, rows: str) -> None:
    """An activity.db as schema `version` (1: no change numbers; 2: indexed on the row) left it, with `rows`."""
    change = ", change INTEGER NOT NULL DEFAULT 0" if version == 2 else ""
    conn = sqlite3.connect(path)
    conn.executescript(f"CREATE TABLE recalls (memory_id TEXT NOT NULL, origin TEXT NOT NULL, count INTEGER NOT NULL, "
                       f"last_ms INTEGER NOT NULL{change}, PRIMARY KEY (memory_id, origin));"
                       + ("CREATE INDEX idx_recalls_change ON recalls (change);" if version == 2 else "") +
                       "CREATE TABLE high_water (origin TEXT PRIMARY KEY, position TEXT NOT NULL);"
                       "CREATE TABLE checkpoint (projector TEXT PRIMARY KEY, position TEXT NOT NULL);"
                       f"{rows} PRAGMA user_version={version};")
    conn.commit()
    conn.close()


async def test_a_schema_1_database_is_migrated_and_read_through_until_then(tmp_path: Path) -> None:
    _old_database(tmp_path / "activity.db", 1, "INSERT INTO recalls VALUES ('a', 'local', 4, 1000);")
    reader = ActivityReader(tmp_path)
    counts = RecallCounts(reader, max_age_s=0)
    await counts.refresh()
    assert not counts.loaded and counts.recalls(["a"])["a"][0] == 4   # no change column: exact reads
    p = ActivityProjector(tmp_path)
    await p.apply([served("a").placed(position="5-0", hlc="5:0:n", origin="local")])
    await counts.refresh()
    assert counts.loaded and counts.recalls(["a"])["a"][0] == 5
    await counts.close()
    reader.close()
    await p.close()


async def test_a_schema_2_database_is_migrated_with_its_counts_and_digest(tmp_path: Path) -> None:
    _old_database(tmp_path / "activity.db", 2, "INSERT INTO recalls VALUES ('a', 'local', 4, 1000, 7), "
                  "('b', 'local', 1, 900, 7); INSERT INTO high_water VALUES ('local', '4-0');")
    fresh = ActivityProjector(tmp_path / "fresh")   # the same counts folded by schema 3
    await fresh.apply([served(*ids).placed(position=f"{i + 1}-0", hlc=f"{ms}:0:n", origin="local")
                       for i, (ids, ms) in enumerate([(("a", "b"), 900), (("a",), 1000), (("a",), 1000),
                                                      (("a",), 1000)])])
    migrated = ActivityProjector(tmp_path)
    await migrated.apply([])
    await migrated.apply([served("a").placed(position="3-0", hlc="3:0:n", origin="local")])   # counted already
    assert await migrated.digest() == await fresh.digest()
    conn = sqlite3.connect(tmp_path / "activity.db")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 4
    assert conn.execute("SELECT sql FROM sqlite_master WHERE name = 'recalls'").fetchone()[0].endswith("WITHOUT ROWID")
    assert conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'idx_recalls_change'").fetchone()[0] == 0
    conn.close()
    reader = ActivityReader(tmp_path)
    counts = RecallCounts(reader, max_age_s=0)
    await counts.refresh()
    assert counts.loaded and counts.recalls(["a", "b"]) == reader.recalls(["a", "b"])
    assert counts.recalls(["a"])["a"][0] == 4
    await counts.close()
    reader.close()
    await migrated.close()
    await fresh.close()


async def test_a_reader_behind_the_kept_change_numbers_reads_every_total(tmp_path: Path, monkeypatch) -> None:
    from projections.activity import projector as activity
    monkeypatch.setattr(activity, "RECALL_CHANGES_KEEP", 3)
    p = ActivityProjector(tmp_path)
    reader = ActivityReader(tmp_path)
    await p.apply([served("a").placed(position="1-0", hlc="1:0:n", origin="local")])
    totals, seen = reader.changed_since(-1)
    assert set(totals) == {"a"} and seen == 1
    await p.apply([served("b", "c", "d").placed(position="2-0", hlc="2:0:n", origin="local")])
    changed, latest = reader.changed_since(seen)
    assert latest == 4 and set(changed) == {"b", "c", "d"}   # 2-4 kept: only what changed after 1
    await p.apply([served("e", "f").placed(position="3-0", hlc="3:0:n", origin="local")])
    changed, latest = reader.changed_since(seen)              # 4-6 kept, 2 and 3 gone: every total
    assert latest == 6 and set(changed) == {"a", "b", "c", "d", "e", "f"}
    changed, _ = reader.changed_since(3)
    assert set(changed) == {"d", "e", "f"}
    reader.close()
    await p.close()
