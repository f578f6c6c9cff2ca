"""One list of error codes: the ErrorCode enum, README's table and the source agree."""

from __future__ import annotations

import re
from pathlib import Path

from commands.error_codes import ErrorCode

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("events", "commands", "projections", "gateway", "replicas")
ROW = re.compile(r"^\|\s*(\d{3}|\dxx)\s*\|\s*`([a-z_]+)`\s*\|\s*(.+?)\s*\|$")
# Where a code is written as a string literal: code="x" / code = "x", ApiError(4xx, "x", ...),
# error_response(5xx, "x", ...), Conflict(..., code="x").
LITERALS = (re.compile(r"\bcode\s*=\s*\"([a-z_]+)\""),
            re.compile(r"(?:ApiError|error_response)\(\s*\d{3},\s*\"([a-z_]+)\""))
MEMBER = re.compile(r"\bErrorCode\.([A-Z_]+)\b")


def _readme_table() -> dict[str, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- error-codes:begin -->", 1)[1].split("<!-- error-codes:end -->", 1)[0]
    rows = {}
    for line in block.splitlines():
        m = ROW.match(line.strip())
        if m:
            assert m.group(2) not in rows, f"README lists {m.group(2)} twice"
            rows[m.group(2)] = m.group(1)
    return rows


def _sources() -> list[Path]:
    return [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if p.name != "error_codes.py"]


def test_the_readme_table_lists_exactly_the_enum():
    table = _readme_table()
    assert set(table) == {c.value for c in ErrorCode}, (
        f"missing from README: {sorted({c.value for c in ErrorCode} - set(table))}; "
        f"not in the enum: {sorted(set(table) - {c.value for c in ErrorCode})}")


def test_the_source_emits_no_code_outside_the_enum():
    known = {c.value for c in ErrorCode}
    members = set(ErrorCode.__members__)
    stray, bad_members, used = [], [], set()
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        for pattern in LITERALS:
            for m in pattern.finditer(text):
                used.add(m.group(1))
                if m.group(1) not in known:
                    stray.append(f"{path.relative_to(ROOT)}: {m.group(1)}")
        for m in MEMBER.finditer(text):
            used.add(ErrorCode.__members__[m.group(1)].value if m.group(1) in members else m.group(1))
            if m.group(1) not in members:
                bad_members.append(f"{path.relative_to(ROOT)}: ErrorCode.{m.group(1)}")
    assert not stray, f"error codes not in commands/error_codes.py: {stray}"
    assert not bad_members, bad_members
    # and the enum holds no code that nothing emits (a stale README row)
    assert known <= used, f"codes nothing emits: {sorted(known - used)}"
