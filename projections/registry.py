"""Which projectors exist and where each keeps its read model.

Each projector has its own subdirectory `<root>/projections/<name>`; `root` is the data dir
for the live projections, or a scratch dir for a rebuild. Add new projectors here (the
knowledge-graph projector will be the next one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from projections.memories import MemoriesProjector
from projections.projector import Projector

PROJECTIONS_DIR = "projections"
NAMES: tuple[str, ...] = ("memories",)


def projections_root(root: Path) -> Path:
    return Path(root) / PROJECTIONS_DIR


def projection_dir(root: Path, name: str) -> Path:
    return projections_root(root) / name


def make_projectors(data_dir: Path, embedder: Any) -> list[Projector]:
    return [MemoriesProjector(projection_dir(data_dir, "memories"), embedder)]
