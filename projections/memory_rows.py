"""The memories read model: its LanceDB schema (seed 2.2) and the pure fold of events into rows.

Every value is derived from the events (times from the event's HLC wall ms, never the clock),
so a replay produces the same rows. Rows are plain dicts keyed by column name; `vector` is a
float32 numpy row, or None until the batch is embedded.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import orjson
import pyarrow as pa

from events.catalogue import MemoryCommitted, MemoryDeleted
from events.envelope import Event
from events.hlc import iso_from_ms
from projections.text import index_text

SCHEMA_VERSION = 2  # 2: search_text (lexical index input)
TABLE = "memories"
SEARCH_TEXT = "search_text"  # projections.text.index_text(content), under a BM25 full-text index
FILTER_COLUMNS = ("namespace", "is_deleted")  # every recall prefilters on these: Bitmap-indexed

# Defaults at commit (seed 2.2): neutral quality until feedback, importance 1.0, fresh.
IMPORTANCE_AT_COMMIT = 1.0
NEUTRAL_QUALITY = 0.5


def memories_schema(dim: int) -> pa.Schema:
    return pa.schema([
        ("id", pa.string()),
        ("content", pa.string()),
        (SEARCH_TEXT, pa.string()),
        ("vector", pa.list_(pa.float32(), dim)),
        ("model", pa.string()),
        ("category", pa.string()),
        ("decay_class", pa.string()),
        ("kind", pa.string()),
        ("namespace", pa.string()),
        ("agent_id", pa.string()),
        ("tier", pa.string()),
        ("importance", pa.float32()),
        ("quality_score", pa.float32()),
        ("freshness", pa.string()),
        ("recall_count", pa.int32()),
        ("useful_count", pa.int32()),
        ("not_useful_count", pa.int32()),
        ("version", pa.int32()),
        ("version_history", pa.string()),
        ("source", pa.string()),
        ("tags", pa.list_(pa.string())),
        ("volatile_flag", pa.bool_()),
        ("timestamp", pa.string()),
        ("last_recalled_at", pa.string()),
        ("is_deleted", pa.bool_()),
        ("depends_on", pa.string()),
        ("derived_from", pa.string()),
        ("position", pa.string()),
    ])


COLUMNS: tuple[str, ...] = tuple(memories_schema(1).names)
SCALAR_COLUMNS: list[str] = [c for c in COLUMNS if c != "vector"]


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


@lru_cache(maxsize=4096)
def _iso(ms: int) -> str:
    return iso_from_ms(ms)


def history_entry(*, version: int, content: str, updated_by: str, source: str, trigger: str,
                  reason: str, timestamp: str) -> dict[str, Any]:
    return {"version": version, "content": content, "updated_by": updated_by, "source": source,
            "trigger": trigger, "reason": reason, "timestamp": timestamp}


def committed_row(event: Event, model: str) -> dict[str, Any]:
    """A new row for `memory.committed` (version 1, one "initial" history entry)."""
    d: MemoryCommitted = event.data
    ts = _iso(event.wall_ms)
    entry = history_entry(version=1, content=d.content, updated_by=event.agent, source=d.source,
                          trigger="none", reason="initial", timestamp=ts)
    return {
        "id": d.memory_id,
        "content": d.content,
        SEARCH_TEXT: index_text(d.content),
        "vector": None,
        "model": model,
        "category": d.category,
        "decay_class": d.decay_class,
        "kind": d.kind,
        "namespace": d.namespace,
        "agent_id": event.agent,
        "tier": d.tier,
        "importance": IMPORTANCE_AT_COMMIT,
        "quality_score": NEUTRAL_QUALITY,
        "freshness": "fresh",
        "recall_count": 0,
        "useful_count": 0,
        "not_useful_count": 0,
        "version": 1,
        "version_history": _json([entry]),
        "source": d.source,
        "tags": list(d.tags),
        "volatile_flag": False,
        "timestamp": ts,
        "last_recalled_at": "",
        "is_deleted": False,
        "depends_on": _json(list(d.depends_on)) if d.depends_on else "[]",
        "derived_from": d.derived_from,
        "position": event.position,
    }


def deleted_row(row: dict[str, Any], event: Event) -> dict[str, Any]:
    """The row after `memory.deleted`: soft-deleted, new version, one more history entry."""
    d: MemoryDeleted = event.data
    history = orjson.loads(row["version_history"] or "[]")
    history.append(history_entry(
        version=d.version, content=row["content"], updated_by=event.agent, source=row["source"],
        trigger="none", reason=f"deleted: {d.reason}" if d.reason else "deleted",
        timestamp=_iso(event.wall_ms)))
    return {**row, "is_deleted": True, "version": d.version, "version_history": _json(history),
            "position": event.position}


def memory_id_of(event: Event) -> str | None:
    """The memory a folded event touches; None for types this projection does not fold."""
    if isinstance(event.data, (MemoryCommitted, MemoryDeleted)):
        return event.data.memory_id
    return None
