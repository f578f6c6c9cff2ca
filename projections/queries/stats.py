"""Memory statistics from the memories read model (sync: call via `asyncio.to_thread`)."""

from __future__ import annotations

from typing import Any

from projections.memories.reader import MemoriesReader


def memory_stats(reader: MemoriesReader) -> dict[str, Any]:
    """{"total": non-deleted memories, "namespaces": {namespace: count}} (namespaces sorted)."""
    per_ns = reader.count_by_namespace()
    return {"total": sum(per_ns.values()), "namespaces": dict(sorted(per_ns.items()))}
