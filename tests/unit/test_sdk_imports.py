"""The client package (`clients/python/zhiyi_client`) imports no server package, and nothing outside
the standard library but aiohttp (its one dependency)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "clients" / "python" / "zhiyi_client"
SERVER_PACKAGES = {"events", "commands", "projections", "gateway", "replicas"}


def imported_tops(path: Path) -> set[str]:
    tops = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            tops |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops.add(node.module.split(".")[0])
    return tops


def test_the_client_imports_no_server_package_and_only_aiohttp_beyond_the_stdlib():
    sources = sorted(PACKAGE.rglob("*.py"))
    assert len(sources) > 10
    server, foreign = [], []
    for path in sources:
        for top in imported_tops(path):
            if top in SERVER_PACKAGES:
                server.append(f"{path.relative_to(ROOT)} imports {top}")
            elif top not in sys.stdlib_module_names and top not in {"aiohttp", "zhiyi_client", "__future__"}:
                foreign.append(f"{path.relative_to(ROOT)} imports {top}")
    assert not server and not foreign, "\n".join(server + foreign)
