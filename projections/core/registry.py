"""Which projectors exist and where each keeps its read model.

Each projector has its own subdirectory `<root>/projections/<name>`; `root` is the data dir
for the live projections, or a scratch dir for a rebuild. Add new projectors here (the
metrics projector is the newest).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from projections.activity.projector import ActivityProjector
from projections.conflicts.projector import ConflictsProjector
from projections.consolidation.projector import ConsolidationProjector
from projections.metrics.projector import MetricsProjector
from projections.graph.projector import GraphProjector
from projections.memories.projector import MemoriesProjector
from projections.core.projector import Projector
from projections.episodes.projector import EpisodesProjector
from projections.synonyms.projector import SynonymsProjector
from projections.tombstones.projector import TombstonesProjector

PROJECTIONS_DIR = "projections"
NAMES: tuple[str, ...] = ("memories", "synonyms", "activity", "tombstones", "graph", "episodes", "conflicts",
                          "consolidation", "metrics")


def projections_root(root: Path) -> Path:
    return Path(root) / PROJECTIONS_DIR


def projection_dir(root: Path, name: str) -> Path:
    return projections_root(root) / name


def make_projectors(data_dir: Path, embedder: Any, *, offline: bool = False) -> list[Projector]:
    """The projectors over `data_dir`. `offline` (a rebuild): no serving indexes are built while
    folding (a live projector adds them on its first `maintain` if the directory is ever served)."""
    synonyms = SynonymsProjector(projection_dir(data_dir, "synonyms"))
    activity = ActivityProjector(projection_dir(data_dir, "activity"))
    tombstones = TombstonesProjector(projection_dir(data_dir, "tombstones"),
                                     compact_after_writes=0 if offline else 100)
    graph = GraphProjector(projection_dir(data_dir, "graph"))
    episodes = EpisodesProjector(projection_dir(data_dir, "episodes"), compact_after_writes=0 if offline else 100)
    conflicts = ConflictsProjector(projection_dir(data_dir, "conflicts"))
    consolidation = ConsolidationProjector(projection_dir(data_dir, "consolidation"))
    metrics = MetricsProjector(projection_dir(data_dir, "metrics"))
    if offline:
        # memo_limit: the vectors `prepare` embeds for the batches read ahead (2, of 10,000 events) and the
        # one being applied stay until it is applied (evicted, they would be embedded again)
        return [MemoriesProjector(projection_dir(data_dir, "memories"), embedder, compact_after_rows=0,
                                  vector_index_min_rows=0, serving_indexes=False, memo_limit=40_000), synonyms,
                activity, tombstones,
                graph, episodes, conflicts, consolidation, metrics]
    return [MemoriesProjector(projection_dir(data_dir, "memories"), embedder), synonyms, activity, tombstones, graph,
            episodes, conflicts, consolidation, metrics]
