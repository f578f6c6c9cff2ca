"""DESIGN.md §2 import rules, checked exactly over the source tree (no whitelist).

- `events` imports no other package of ours; only `events/redis/` imports `redis`.
- `commands` imports `events` and, from `projections`, only what it needs to decide: `queries`, `text`,
  `models`, and a read model's public read surface — its `reader` and `scores` modules
  (`projections/<model>/reader.py`, a naming rule, not a list).
- `projections` imports `events` and itself; `replicas` imports `events`, `commands`, `projections`.
- `gateway` imports everything; nothing imports `gateway`.
- The Python client (`clients/python/zhiyi_client`) imports no package of ours (and no server package
  imports it); tests/unit/test_sdk_imports.py also bounds its third-party imports.
- Only the gateway's settings read the environment (`Environment.read`), and nothing writes it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OURS = ("events", "commands", "projections", "replicas", "gateway")
ALLOWED = {
    "events": {"events"},
    "commands": {"events", "commands", "projections"},
    "projections": {"events", "projections"},
    "replicas": {"events", "commands", "projections", "replicas"},
    "gateway": set(OURS),
}
#: Folders of `projections/` that are not read models.
NOT_READ_MODELS = {"core", "serving", "models", "text", "queries"}
#: What `commands` may import from a read model's folder: its public read surface.
READ_SURFACE = {"reader", "scores"}
ENVIRONMENT_READERS = {"gateway/process/settings.py"}


def _sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _modules(path: Path) -> list[str]:
    """Absolute module names imported by `path` (`from a.b import c` counts as `a.b.c` and `a.b`)."""
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
            out += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            out.append("<relative import>")
    return out


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_every_package_imports_only_what_the_design_allows():
    bad = []
    for package, allowed in ALLOWED.items():
        for path in _sources(package):
            for module in _modules(path):
                top = module.split(".")[0]
                if module == "<relative import>" or (top in OURS and top not in allowed):
                    bad.append(f"{_rel(path)} imports {module}")
    assert not bad, "\n".join(bad)


def test_the_python_client_and_the_server_import_nothing_of_each_other():
    bad = []
    for path in sorted((ROOT / "clients" / "python" / "zhiyi_client").rglob("*.py")):
        bad += [f"{_rel(path)} imports {m}" for m in _modules(path)
                if m.split(".")[0] in OURS and m != "<relative import>"]
    for package in OURS:
        for path in _sources(package):
            bad += [f"{_rel(path)} imports {m}" for m in _modules(path) if m.split(".")[0] == "zhiyi_client"]
    assert not bad, "\n".join(bad)


def _commands_may_import(module: str) -> bool:
    parts = module.split(".")
    if parts[0] != "projections" or len(parts) == 1:
        return parts[0] != "projections"
    if parts[1] in {"queries", "text", "models"}:
        return True
    if parts[1] in NOT_READ_MODELS or not (ROOT / "projections" / parts[1]).is_dir():
        return False
    # `from projections.memories import reader` names the package and then the module
    return len(parts) == 2 or parts[2] in READ_SURFACE


def test_commands_read_projections_only_through_queries_text_models_and_readers():
    bad = []
    for path in _sources("commands"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("projections"):
                targets = [node.module] if len(node.module.split(".")) > 2 else \
                    [f"{node.module}.{a.name}" for a in node.names]
                bad += [f"{_rel(path)} imports {t}" for t in targets if not _commands_may_import(t)]
            elif isinstance(node, ast.Import):
                bad += [f"{_rel(path)} imports {a.name}" for a in node.names
                        if a.name.startswith("projections") and not _commands_may_import(a.name)]
    assert not bad, "\n".join(bad)


def test_the_rule_itself_separates_read_surfaces_from_internals():
    assert _commands_may_import("projections.memories.reader")
    assert _commands_may_import("projections.memories.scores")
    assert _commands_may_import("projections.queries.recall.service")
    assert _commands_may_import("projections.text.entities")
    assert not _commands_may_import("projections.memories.fold")
    assert not _commands_may_import("projections.core.runner")
    assert not _commands_may_import("projections.serving.index")


def test_only_events_redis_imports_redis():
    bad = []
    for package in OURS:
        for path in _sources(package):
            if _rel(path).startswith("events/redis/"):
                continue
            bad += [f"{_rel(path)} imports {m}" for m in _modules(path) if m.split(".")[0] == "redis"]
    assert not bad, "\n".join(bad)


def test_only_the_settings_read_the_environment_and_nothing_writes_it():
    bad = []
    for package in OURS:
        for path in _sources(package):
            text = path.read_text(encoding="utf-8")
            if ("os.environ" in text or "os.getenv" in text or "putenv" in text) \
                    and _rel(path) not in ENVIRONMENT_READERS:
                bad.append(_rel(path))
    assert not bad, bad


def test_the_environment_readers_exist():
    for rel in ENVIRONMENT_READERS:
        assert (ROOT / rel).is_file(), rel


#: The services the wiring builds (DESIGN §2: one wiring module builds every service).
SERVICES = ("EventStore", "CommandService", "RecallService", "EvalService", "Scheduler", "ReactionsRunner",
            "MemoriesReader", "GraphReader", "ActivityReader", "TombstonesReader", "SynonymsReader",
            "AuditWriter", "RunnerSet", "CheckpointWaiter")
WIRING = "gateway/process/wiring.py"
# a rebuild's second process wires one log reader, without importing every service's module
WIRINGS = (WIRING, "gateway/process/log_reader.py")


def test_only_the_wiring_builds_the_services():
    bad = []
    for package in OURS:
        for path in _sources(package):
            if _rel(path) in WIRINGS:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in SERVICES:
                    bad.append(f"{_rel(path)}:{node.lineno} builds {node.func.id}")
    assert not bad, "\n".join(bad)
