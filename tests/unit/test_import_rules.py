"""DESIGN.md section 2 import rules, checked over the source tree."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = {
    "events": {"events"},
    "commands": {"events", "commands", "projections"},   # commands may call projections.queries to decide
    "projections": {"events", "projections"},
    "replicas": {"events", "projections", "replicas"},
}
OURS = {"events", "commands", "projections", "replicas", "gateway"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out & OURS


def test_packages_import_only_what_the_design_allows():
    bad = []
    for package, allowed in ALLOWED.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            for imported in _imports(path) - allowed:
                bad.append(f"{path.relative_to(ROOT)} imports {imported}")
    assert not bad, "\n".join(bad)


def test_commands_use_only_the_query_side_of_projections():
    bad = []
    for path in sorted((ROOT / "commands").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("projections"):
                if not node.module.startswith(("projections.queries", "projections.text.entities", "projections.text.lexical",
                                               "projections.memories.scores", "projections.memories.reader",
                                               "projections.models.http_poster")):
                    bad.append(f"{path.relative_to(ROOT)} imports {node.module}")
    assert not bad, "\n".join(bad)


# rerank_local saves and restores OMP_NUM_THREADS around loading its model (the package writes it):
# process hygiene, not configuration.
ENV_HYGIENE = {"projections/models/rerank_local.py"}


def test_only_the_cli_reads_the_environment():
    bad = []
    for package in sorted(OURS):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.relative_to(ROOT).as_posix() in {"gateway/cli/main.py", *ENV_HYGIENE}:
                continue
            text = path.read_text(encoding="utf-8")
            if "os.environ" in text or "os.getenv" in text:
                bad.append(str(path.relative_to(ROOT)))
    assert not bad, bad
