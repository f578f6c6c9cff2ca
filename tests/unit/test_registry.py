"""The projector registry: every projection in NAMES order, a subset on request, and a subset costs
only its own imports (the replay's second process folds the graph without LanceDB)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from projections.core.registry import NAMES, make_projectors, projection_dir
from tests.hash_embedder import HashEmbedder


def test_every_projection_in_order_each_in_its_directory(tmp_path: Path) -> None:
    projectors = make_projectors(tmp_path, HashEmbedder(8))
    assert [p.name for p in projectors] == list(NAMES)
    assert all(getattr(p, "directory") == projection_dir(tmp_path, p.name) for p in projectors)


def test_a_subset_keeps_the_registry_order_and_refuses_unknown_names(tmp_path: Path) -> None:
    assert [p.name for p in make_projectors(tmp_path, None, only=["graph", "activity"])] == ["activity", "graph"]
    with pytest.raises(ValueError, match="graphs"):
        make_projectors(tmp_path, None, only=["graph", "graphs"])


def test_the_second_process_projections_load_no_lancedb(tmp_path: Path) -> None:
    from projections.core.rebuild_process import AWAY

    code = ("import sys; from projections.core.registry import make_projectors; "
            f"make_projectors({str(tmp_path)!r}, None, offline=True, only={sorted(AWAY)!r}); "
            "import projections.core.rebuild_process, gateway.process.log_reader; "
            "print(sorted(m for m in ('lancedb', 'pyarrow', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]", out.stderr
