"""The memories read model: its LanceDB schema (seed 2.2, plus `search_text` and `crdt`).

Rows are plain dicts keyed by column name; `vector` is a float32 numpy row, or None until the
batch is embedded. The fold itself (events -> rows, through the CRDT record) is
`projections.memories.fold`; every value comes from the events, never the clock.
"""

from __future__ import annotations

import pyarrow as pa

from events.catalogue import (
    ConflictDetected, ConflictResolved, MemoryCommitted, MemoryCorrected, MemoryDeleted, MemoryDeprecated,
    MemoryDownweighted, MemoryFeedback, MemoryForgotten, MemoryMarkedStale, MemoryMerged, MemoryQualityDropped,
    MemoryQualityRecovered, MemoryUnmerged, MemoryValidated,
)
from events.envelope import Event

# 2: search_text (lexical index input); 3: crdt (the CRDT record's bookkeeping);
# 4: confidence, updated_at, quality_notice_at (derived scores, quality deadline);
# 5: feedback as one LWW vote per agent (crdt "v"; useful/not_useful counts and quality derived from it)
# 6: merged_into (seed 2.2; an LWW register, "" when live), conflicts (the open conflicts it is in) and
#    extractor (who distilled it; "" for an agent's commit)
SCHEMA_VERSION = 6
# The table's copy of each vector is half precision (1 KB at 512-d, was 2 KB): the full-precision one is the
# embedding cache's (projections.models.embedding_cache). Not a schema version: the columns, their values
# as the digest sees them (vectors stand for (model, sha256(content))) and every reader (they read float32
# out of either) are the same, so a table made before keeps its float32 vectors and is folded on as it is;
# a rebuild (`zhiyi replay --in-place`) writes the compact form.
VECTOR_TYPE = pa.float16()
TABLE = "memories"
SEARCH_TEXT = "search_text"  # projections.text.lexical.index_text(content), under a BM25 full-text index
FILTER_COLUMNS = ("namespace", "is_deleted")  # every recall prefilters on these: Bitmap-indexed


def memories_schema(dim: int) -> pa.Schema:
    return pa.schema([
        ("id", pa.string()),
        ("content", pa.string()),
        (SEARCH_TEXT, pa.string()),
        ("vector", pa.list_(VECTOR_TYPE, dim)),
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
        ("useful_count", pa.int32()),       # agents whose latest vote is useful (one vote per agent)
        ("not_useful_count", pa.int32()),   # agents whose latest vote is not useful
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
        ("extractor", pa.string()),     # the distillation extractor that wrote it, "" for an agent's commit
        ("position", pa.string()),
        ("status", pa.string()),   # active | deprecated | merged
        ("merged_into", pa.string()),   # the survivor this memory was merged into (seed 6.2), "" when live
        ("conflicts", pa.list_(pa.string())),   # ids of the open conflicts this memory is in (seed 3.3.2)
        ("confidence", pa.float32()),   # source trust + PassiveValidator gains, <= 1.0
        ("updated_at", pa.string()),    # ISO time of the latest content version (commit/correction)
        ("quality_notice_at", pa.string()),  # ISO time of the open quality.dropped notice, or ""
        ("crdt", pa.string()),   # JSON: stamps, per-origin counters, votes, high-water (projections.memories.fold)
    ])


COLUMNS: tuple[str, ...] = tuple(memories_schema(1).names)
SCALAR_COLUMNS: list[str] = [c for c in COLUMNS if c != "vector"]


MEMORY_EVENTS = (MemoryCommitted, MemoryDeleted, MemoryCorrected, MemoryDeprecated, MemoryFeedback, MemoryForgotten,
                 MemoryMarkedStale, MemoryQualityDropped, MemoryQualityRecovered, MemoryDownweighted, MemoryValidated)


def memory_ids_of(event: Event) -> tuple[str, ...]:
    """The memories a folded event touches (a merge: the merged one and its survivor; a conflict:
    its two memories); () for types this projection does not fold."""
    d = event.data
    if isinstance(d, MEMORY_EVENTS):
        return (d.memory_id,)
    if isinstance(d, (MemoryMerged, MemoryUnmerged)):
        return (d.memory_id, d.merged_into)
    if isinstance(d, (ConflictDetected, ConflictResolved)):
        return tuple(dict.fromkeys(d.memory_ids))[:2]
    return ()


def read_scope_of(event: Event) -> str | None:
    """The namespace whose reads the event changes ("*" when it spans two), None for none."""
    d = event.data
    if isinstance(d, MEMORY_EVENTS):
        return getattr(d, "namespace", None) or event.ns
    if isinstance(d, (MemoryMerged, MemoryUnmerged)):
        return d.namespace if d.namespace == d.survivor_namespace else "*"
    if isinstance(d, (ConflictDetected, ConflictResolved)):
        return "*"   # its memories may lie in two namespaces (one of them `shared`)
    return None

