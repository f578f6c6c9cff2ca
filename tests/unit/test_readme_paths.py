"""Every repository path README.md names exists (issue 12's acceptance: a re-layout must update it).

Named paths are words in backticks (the first word of a span: `tests/bench/ingest.py --durable`) that
start with a top-level folder of the repository (`events/`, `commands/`, `projections/`, `gateway/`,
`replicas/`, `tests/`), the like in fenced code blocks when they name a file (`tests/bench/graph.py`,
not the "events/s" of a comment) or a folder/, and bare module names in backticks (`store.py`),
which must be a module somewhere in those folders. Data paths (`./data`, `<data-dir>/api_key`,
`data/api_key`), API routes and `../shared/DESIGN.md` (outside the repository) are not repo paths.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOP = ("events", "commands", "projections", "gateway", "replicas", "tests")
REPO_PATH = re.compile(rf"^(?:{'|'.join(TOP)})/[\w./-]*$")
IN_CODE = re.compile(rf"(?<![\w./<$-])((?:{'|'.join(TOP)})/[\w./-]*(?:\.\w+|/))")  # a file or a folder/
BARE_MODULE = re.compile(r"^\w+\.(?:py|lua)$")


def named_paths(text: str) -> tuple[set[str], set[str]]:
    """(repo paths, bare module names) named in the markdown `text`."""
    paths: set[str] = set()
    modules: set[str] = set()
    fenced = re.compile(r"^```.*?^```", re.S | re.M)
    for block in fenced.findall(text):
        paths.update(m.rstrip(".") for m in IN_CODE.findall(block))
    for span in re.findall(r"`([^`\n]+)`", fenced.sub("", text)):
        word = span.split()[0] if span.split() else ""
        if REPO_PATH.match(word):
            paths.add(word.rstrip("."))
        elif BARE_MODULE.match(word):
            modules.add(word)
    return paths, modules


def _modules_in_repo() -> set[str]:
    return {p.name for top in TOP if (ROOT / top).is_dir() for p in (ROOT / top).rglob("*") if p.is_file()}


def test_every_path_readme_names_exists() -> None:
    paths, modules = named_paths((ROOT / "README.md").read_text(encoding="utf-8"))
    assert not sorted(p for p in paths if not (ROOT / p).exists()), "README.md names paths that do not exist"
    assert not sorted(modules - _modules_in_repo()), "README.md names modules that do not exist"


def test_the_readme_names_the_paths_this_test_is_meant_to_check() -> None:
    """The extractor still sees README's paths (a format change must not make the check vacuous)."""
    paths, modules = named_paths((ROOT / "README.md").read_text(encoding="utf-8"))
    assert {"tests/bench/ingest.py", "commands/error_codes.py"} <= paths
    assert len(paths) >= 15 and "store.py" in modules


def test_the_extractor_tells_repo_paths_from_data_paths_and_routes() -> None:
    text = """
Memories live under `./data/projections`, the key in `<data-dir>/api_key`; `data/api_key` too.
See `../shared/DESIGN.md`, `GET /api/v1/stats`, `eval/run`, `projections.<epoch>/`.
Scores are in `projections/memories/scores.py`; `events/` holds `store.py`; `tests/bench/ingest.py --durable`.

```bash
export ADMIN_KEY=$(cat data/api_key)
curl -s $ZHIYI/api/v1/recall
.venv/bin/python tests/bench/nowhere.py    # a comment naming gateway/http/app.py., events/s
```
"""
    paths, modules = named_paths(text)
    assert paths == {"projections/memories/scores.py", "events/", "tests/bench/ingest.py", "tests/bench/nowhere.py",
                     "gateway/http/app.py"}
    assert modules == {"store.py"}
    assert [p for p in sorted(paths) if not (ROOT / p).exists()] == ["tests/bench/nowhere.py"]
