"""The committed fixture log folds to the digests recorded before issue 12's re-layout.

tests/fixtures/event_log.jsonl is a log recorded once from the real app (every catalogued event
type, original stream ids and raw fields); tests/fixtures/event_log.digests.json holds what the
folds of the code of that day made of it. A re-layout that changes no behaviour leaves every
digest and position identical: a full rebuild (`zhiyi replay --into`), the live runners
(`zhiyi digest`) and `zhiyi replay --verify`. A digest that differs means a fold changed —
fix the fold, do not re-record the digests.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from events.catalogue import known_types
from events.redis import keys
from projections.core.replay import live_digests
from tests.fixture_log import (DIGESTS_PATH, LOG_PATH, REGENERATE, FixtureEmbedder, entry_types, fold_digests,
                               load_fixture_log, read_entries)


def recorded() -> dict:
    return orjson.loads(DIGESTS_PATH.read_bytes())


def test_the_fixture_covers_every_catalogued_event_type() -> None:
    missing = {t for t in known_types() if not t.startswith("test.")} - entry_types(read_entries())  # not the tests' own
    assert not missing, (
        f"the fixture log lacks {sorted(missing)}: a new event type must be folded by the fixture too. "
        f"Extend drive() in tests/fixtures/make_event_log.py, then run `{REGENERATE}` "
        "on code whose folds are unchanged (the recorded digests must come from the same folds)")
    assert LOG_PATH.stat().st_size < 1_000_000


async def test_the_loader_keeps_original_ids_fields_and_indexes(redis) -> None:
    entries = read_entries()
    last = await load_fixture_log(redis)
    stored = await redis.xrange("zhiyi:events")
    assert last == entries[-1][0] and len(stored) == len(entries)
    assert [(p.decode(), [(k.decode(), v.decode()) for k, v in f.items()]) for p, f in stored] == entries
    agents = {orjson.loads(dict(f)["d"])["agent_id"] for _, f in entries if dict(f)["t"] == "agent.registered"}
    index = {k.decode(): v for k, v in (await redis.hgetall(keys.AGENT_KEYS)).items()}
    last = [(dict(f)["t"], orjson.loads(dict(f)["d"])) for _, f in entries
            if dict(f)["t"] in ("agent.registered", "agent.key_rotated", "agent.key_revoked")][-1]
    assert index.pop(keys.AGENT_KEYS_VERSION).decode() == (   # the keys' version: what the last key write set
        "-" + last[1]["previous_hash"] if last[0] == "agent.key_revoked" else last[1]["key_hash"])
    assert {v.decode() for v in index.values() if v} == agents            # write-side indexes rebuilt: the live
                                                                          # keys, and the rotated-out ones map
    withdrawn = {orjson.loads(dict(f)["d"])["previous_hash"] for _, f in entries          # to nobody
                 if dict(f)["t"] in ("agent.key_rotated", "agent.key_revoked")} - {""}
    assert {k for k, v in index.items() if not v} == withdrawn


async def test_rebuild_live_runners_and_verify_give_the_recorded_digests(redis, tmp_path: Path, monkeypatch) -> None:
    from projections.core import lance_projection

    monkeypatch.setattr(lance_projection, "DIGEST_CHUNK", 3)   # the LanceDB tables digested a few rows at a time
    want = recorded()
    await load_fixture_log(redis)
    got = await fold_digests(redis, tmp_path)
    regenerate = ("a fold changed the digests recorded before the re-layout: fix the fold (re-record only "
                  "together with a regenerated log, see tests/fixtures/make_event_log.py)")
    assert got["rebuild"] == want["rebuild"], regenerate
    assert got["live"] == want["live"], regenerate
    assert got["verify_ok"], got["verify_mismatches"]
    empty = await live_digests(tmp_path / "nothing", FixtureEmbedder())
    assert all(want["rebuild"][n]["digest"] != empty[n].digest for n in empty), "every projection holds rows"
    assert set(want["rebuild"]) == set(empty)  # one recorded digest per projection of the registry
