"""The rows the time-driven rules decide on (`commands.rules.forgetting`, `commands.rules.time_rules`):
live memories from the memories projection with their recall counts from the activity projection.
Synchronous (LanceDB, SQLite): call from a thread."""

from __future__ import annotations

from typing import Any

from projections.activity.reader import ActivityReader
from projections.core.lance import sql_quote
from projections.memories.reader import MemoriesReader

#: What the rules read of a memory (plus `recall_count` and `last_recalled_at`, added from activity).
COLUMNS = ["id", "namespace", "version", "content", "quality_score", "useful_count", "not_useful_count", "status",
           "timestamp", "tier", "decay_class", "freshness", "importance", "volatile_flag", "updated_at",
           "quality_notice_at", "source", "confidence"]


def live_rows(reader: MemoriesReader, activity: ActivityReader, namespace: str | None = None) -> list[dict[str, Any]]:
    """The live memories (all namespaces, or one) with the columns the rules need and their recall
    counts (`recall_count`, `last_recalled_at`); none while the table does not exist."""
    table = reader.table()
    if table is None:
        return []
    where = "is_deleted = false" + (f" AND namespace = {sql_quote(namespace)}" if namespace else "")
    rows = table.search().where(where).select(COLUMNS).limit(None).to_arrow().to_pylist()
    recalls = activity.recalls([r["id"] for r in rows])
    for r in rows:
        r["recall_count"], r["last_recalled_at"] = recalls.get(r["id"], (0, ""))
    return rows
