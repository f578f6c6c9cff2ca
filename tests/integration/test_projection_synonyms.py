"""The synonyms projector (SQLite): fold, effectively-once, digests, the reader. A crash before the checkpoint
(rows and checkpoint in one transaction): tests/integration/test_projector_contract.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from events.catalogue import MemoryCommitted, SynonymAdded, new_event
from events.envelope import Event
from projections.synonyms.reader import SynonymsReader
from projections.synonyms.projector import SynonymsProjector


def syn(term: str, *synonyms: str, ns: str = "shared") -> Event:
    return new_event(SynonymAdded(term, synonyms, ns), ns=ns, agent="admin", by="admin")


def other(i: int) -> Event:
    return new_event(MemoryCommitted(f"m{i}", f"memory {i}", "shared", "fact", "system_fact"), ns="shared", agent="a")


async def fold(store, projector: SynonymsProjector, batch: int = 2) -> None:
    from projections.core.runner import ProjectionRunner

    await ProjectionRunner(store, projector, publish=False, batch_size=batch).catch_up()


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    return tmp_path / "projections" / "synonyms"


async def test_fold_lists_additions_and_expands_symmetrically(store, directory) -> None:
    await store.append([syn("K8s", "Kubernetes", "容器编排"), other(1), syn("容器编排", "orchestration")])
    await store.append([syn("数据库", "DB", ns="alice-main"), syn("k8s", "KUBERNETES", "kube")])
    p = SynonymsProjector(directory)
    await fold(store, p)
    assert await p.load_checkpoint() == await store.last_position()
    reader = SynonymsReader(directory)
    adds = reader.additions()
    assert [(a["term"], a["synonyms"], a["namespace"]) for a in adds] == [
        ("K8s", ["Kubernetes", "容器编排"], "shared"), ("容器编排", ["orchestration"], "shared"),
        ("数据库", ["DB"], "alice-main"), ("k8s", ["KUBERNETES", "kube"], "shared")]
    assert reader.additions("alice-main")[0]["term"] == "数据库"
    assert reader.expansions("restart kube pods", ["shared"]) == ["k8s", "KUBERNETES"]  # its own group only
    assert reader.expansions("k8s 升级") == ["kube", "Kubernetes", "容器编排"]  # not "orchestration"
    assert reader.expansions("主数据库", ["shared"]) == [] and reader.expansions("主数据库") == ["DB"]
    await p.close()
    reader.close()


async def test_reapplying_a_batch_changes_nothing(store, directory) -> None:
    await store.append([syn("gpu", "显卡"), syn("cpu", "处理器")])
    events = await store.read()
    p = SynonymsProjector(directory)
    await p.apply(events)
    digest = await p.digest()
    await p.apply(events)           # redelivered
    await p.apply(events[:1])       # an older prefix
    assert await p.digest() == digest and await p.load_checkpoint() == events[-1].position
    fresh = SynonymsProjector(directory)  # a second writer sees the same checkpoint
    await fresh.apply(events)
    assert await fresh.digest() == digest
    with sqlite3.connect(directory / "synonyms.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    await p.close()
    await fresh.close()


async def test_reader_reloads_only_when_the_database_changes(store, directory) -> None:
    reader = SynonymsReader(directory)
    assert reader.expansions("gpu") == [] and not directory.exists()  # reading created nothing
    p = SynonymsProjector(directory)
    await store.append([syn("gpu", "显卡")])
    await fold(store, p)
    table = reader.table()
    assert reader.expansions("gpu") == ["显卡"] and reader.table() is table  # cached
    await store.append([syn("gpu", "graphics card")])
    await fold(store, p)
    assert reader.table() is not table and reader.expansions("gpu") == ["graphics card", "显卡"]
    await p.close()
    reader.close()


async def test_digest_of_a_rebuild_equals_the_live_digest(store, tmp_path) -> None:
    await store.append([syn("k8s", "kubernetes"), other(1), syn("数据库", "DB", "database")])
    await store.append([other(2), syn("db", "数据库", ns="bob-main")])
    live = SynonymsProjector(tmp_path / "live")
    await fold(store, live, batch=1)
    rebuilt = SynonymsProjector(tmp_path / "rebuilt")
    await fold(store, rebuilt, batch=500)
    empty = SynonymsProjector(tmp_path / "none")
    assert await live.digest() == await rebuilt.digest() != await empty.digest()
    assert await empty.load_checkpoint() is None and not (tmp_path / "none").exists()
    for p in (live, rebuilt, empty):
        await p.close()
