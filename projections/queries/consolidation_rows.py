"""What deep consolidation reads of the memories projection: the live memories (not deleted, not
merged) with their vectors, of the model most of them were embedded with (vectors of two models are
not comparable). Synchronous (LanceDB): call from a thread."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from projections.memories.reader import MemoriesReader

COLUMNS = ["id", "namespace", "category", "kind", "content", "extractor", "decay_class", "timestamp", "updated_at",
           "tier", "useful_count", "not_useful_count", "derived_from", "agent_id", "model", "vector"]


def live_with_vectors(reader: MemoriesReader) -> tuple[list[dict[str, Any]], np.ndarray]:
    """(rows without their vectors, the vectors as one float32 matrix), ordered by id."""
    table = reader.table()
    if table is None:
        return [], np.zeros((0, 0), dtype=np.float32)
    rows = table.search().where("is_deleted = false AND merged_into = ''").select(COLUMNS).limit(None) \
        .to_arrow().to_pylist()
    if not rows:
        return [], np.zeros((0, 0), dtype=np.float32)
    model = Counter(r["model"] for r in rows).most_common(1)[0][0]
    rows = sorted((r for r in rows if r["model"] == model), key=lambda r: r["id"])
    vectors = np.asarray([r.pop("vector") for r in rows], dtype=np.float32)
    return rows, vectors
