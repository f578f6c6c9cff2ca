"""Reading memories for golden-set generation: a deterministic sample of the memories table.

Only ids (and the kind) are read for every memory; contents are fetched for the sampled ones.
Sync (the reader's sync table handle): call through `asyncio.to_thread`. A missing table reads as empty.
"""

from __future__ import annotations

import hashlib

from projections.core.lance import sql_in
from projections.queries.evaluation.golden_rules import SourceMemory
from projections.memories.reader import MemoriesReader, valid_namespaces

SAMPLE_PER_KIND = 64
MAX_FETCH = 1000
SYSTEM_AUTHORS = ("system", "reaction", "scheduler")
"""Memories these wrote (deep consolidation's patterns) have no agent to evaluate them as: not sampled."""


def _filter(namespaces: list[str] | None) -> str:
    where = f"is_deleted = false AND NOT {sql_in('agent_id', list(SYSTEM_AUTHORS))}"
    if namespaces:
        where += f" AND {sql_in('namespace', valid_namespaces(namespaces))}"
    return where


def sample_memories(reader: MemoriesReader, seed: int, *, namespaces: list[str] | None = None,
                    per_kind: int = SAMPLE_PER_KIND) -> list[SourceMemory]:
    """Up to `per_kind` live memories of each decay class, chosen by sha256(seed:id) order."""
    table = reader.table()
    if table is None:
        return []
    ids = (table.search().where(_filter(namespaces)).select(["id", "decay_class"]).limit(None)
           .to_arrow().to_pylist())
    by_kind: dict[str, list[str]] = {}
    for row in sorted(ids, key=lambda r: hashlib.sha256(f"{seed}:{r['id']}".encode()).hexdigest()):
        chosen = by_kind.setdefault(row["decay_class"], [])
        if len(chosen) < per_kind:
            chosen.append(row["id"])
    wanted = [i for chosen in by_kind.values() for i in chosen][:MAX_FETCH]
    if not wanted:
        return []
    rows = (table.search().where(f"{sql_in('id', wanted)} AND is_deleted = false")
            .select(["id", "content", "decay_class", "agent_id", "namespace"]).limit(len(wanted))
            .to_arrow().to_pylist())
    return sorted((SourceMemory(r["id"], r["content"], r["decay_class"], r.get("agent_id") or "",
                                r.get("namespace") or "") for r in rows), key=lambda m: m.memory_id)

