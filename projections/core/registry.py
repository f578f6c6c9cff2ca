"""Which projectors exist and where each keeps its read model.

Each projector has its own subdirectory `<root>/projections/<name>`; `root` is the data dir
for the live projections, or a scratch dir for a rebuild. Add new projectors here (the
learning projector is the newest).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Collection

from projections.core.projector import Projector

PROJECTIONS_DIR = "projections"
NAMES: tuple[str, ...] = ("memories", "synonyms", "activity", "tombstones", "graph", "episodes", "conflicts",
                          "consolidation", "metrics", "learning")


def projections_root(root: Path) -> Path:
    return Path(root) / PROJECTIONS_DIR


def projection_dir(root: Path, name: str) -> Path:
    return projections_root(root) / name


# Each projector's module is imported when one is made, not with this module: the replay's second
# process folds graph alone and would otherwise pay LanceDB's import (~1 s), and the many modules that
# only want NAMES or a directory load nothing heavy.
Factory = Callable[[Path, Any, bool], Projector]


def _memories(directory: Path, embedder: Any, offline: bool) -> Projector:
    from projections.memories.projector import MemoriesProjector
    if offline:
        # memo_limit: the vectors `prepare` embeds for the batches read ahead (2, of 10,000 events) and the
        # one being applied stay until it is applied (evicted, they would be embedded again)
        return MemoriesProjector(directory, embedder, compact_after_rows=0, vector_index_min_rows=0,
                                 serving_indexes=False, memo_limit=40_000, unread=True)
    return MemoriesProjector(directory, embedder)


def _synonyms(directory: Path, embedder: Any, offline: bool) -> Projector:
    from projections.synonyms.projector import SynonymsProjector
    return SynonymsProjector(directory)


def _activity(directory: Path, embedder: Any, offline: bool) -> Projector:
    from projections.activity.projector import ActivityProjector
    return ActivityProjector(directory)


def _tombstones(directory: Path, embedder: Any, offline: bool) -> Projector:
    from projections.tombstones.projector import TombstonesProjector
    return TombstonesProjector(directory, compact_after_writes=0 if offline else 100)


def _graph(directory: Path, embedder: Any, offline: bool) -> Projector:
    from projections.graph.projector import GraphProjector
    return GraphProjector(directory, log_changes=not offline)


def _episodes(directory: Path, embedder: Any, offline: bool) -> Projector:
    from projections.episodes.projector import EpisodesProjector
    return EpisodesProjector(directory, compact_after_writes=0 if offline else 100)


def _conflicts(directory: Path, embedder: Any, offline: bool) -> Projector:
    from projections.conflicts.projector import ConflictsProjector
    return ConflictsProjector(directory)


def _consolidation(directory: Path, embedder: Any, offline: bool) -> Projector:
    from projections.consolidation.projector import ConsolidationProjector
    return ConsolidationProjector(directory)


def _metrics(directory: Path, embedder: Any, offline: bool) -> Projector:
    from projections.metrics.projector import MetricsProjector
    return MetricsProjector(directory)


def _learning(directory: Path, embedder: Any, offline: bool) -> Projector:
    from projections.learning.projector import LearningProjector
    return LearningProjector(directory)


_FACTORIES: dict[str, Factory] = {
    "memories": _memories, "synonyms": _synonyms, "activity": _activity, "tombstones": _tombstones,
    "graph": _graph, "episodes": _episodes, "conflicts": _conflicts, "consolidation": _consolidation,
    "metrics": _metrics, "learning": _learning,
}
assert tuple(_FACTORIES) == NAMES


def make_projectors(data_dir: Path, embedder: Any, *, offline: bool = False,
                    only: Collection[str] | None = None) -> list[Projector]:
    """The projectors over `data_dir` (in NAMES order; `only`: just these). `offline` (a rebuild): no
    serving indexes are built while folding (a live projector adds them on its first `maintain` if the
    directory is ever served)."""
    if only is not None and (unknown := set(only) - set(NAMES)):
        raise ValueError(f"unknown projections: {sorted(unknown)}")
    return [factory(projection_dir(data_dir, name), embedder, offline) for name, factory in _FACTORIES.items()
            if only is None or name in only]
