"""Corrections within one episode: "my son is 5" ... "oh wait, he turned 6 last month". The user's
own correction of a value they gave earlier in the same conversation updates the earlier memory
in place (5 -> 6), so the episode does not yield a stale value next to the right one.

Only a statement that opens as a correction ("wait", "sorry", "I meant", "不对", "说错了", ...) or
names the old value it replaces ("not 14", "不是 5 岁") corrects, and only a value of the same kind:
the same unit ("5岁" -> "6岁", "2 GPUs" -> "3 GPUs"), a clock time, or the value the correction
names. Pure: a function of the episode's texts.
"""

from __future__ import annotations

import re
from typing import Final, Sequence

CORRECTION_LEAD: Final = re.compile(
    r"^\W*(?:(?:oh|ah|hmm|no|nope|ok|okay)\b[\s,.!]*)*(?:wait|sorry|correction|my bad|scratch that|i meant|i mean|"
    r"oops|hold on|let me correct)\b"
    r"|^\W*(?:哦|噢|呃|嗯|啊|哎)?[，,\s]*(?:不对|说错了|搞错了|记错了|打错了|写错了|更正|纠正|等等|哦不|不好意思)"
    r"|记错|说错|搞错|i was wrong|i misspoke|typo", re.IGNORECASE)
_VALUE: Final = re.compile(r"(?<![A-Za-z0-9_.:/-])(\d+(?:[.:]\d+)*)(?:\s?([A-Za-z%]+|[\u4e00-\u9fff]))?")
_NEGATED: Final = re.compile(r"(?:\bnot|\binstead of|\brather than|不是|而不是)\s*(\d+(?:[.:]\d+)*)", re.IGNORECASE)


def _values(text: str) -> list[tuple[str, str]]:
    """(value, kind) of each number: kind is "time" for a clock time, else its unit, else ""."""
    out = []
    for value, unit in _VALUE.findall(text):
        kind = "time" if re.fullmatch(r"\d{1,2}:\d{2}", value) else (unit or "").lower()
        out.append((value, kind))
    return out


def is_correction(text: str) -> bool:
    return bool(CORRECTION_LEAD.search(text) or _NEGATED.search(text))


def _replacement(old: tuple[str, str], named_old: set[str], new: Sequence[tuple[str, str]]) -> str | None:
    value, kind = old
    if value in named_old:
        same = [v for v, k in new if k == kind] or [v for v, _ in new]
        return same[0] if len(set(same)) == 1 else None
    if not kind or value in {v for v, _ in new}:
        return None
    same = {v for v, k in new if k == kind}
    return same.pop() if len(same) == 1 else None


def correct(earlier: Sequence[str], correction: str) -> tuple[int, str] | None:
    """The latest of `earlier` (memories of the same episode, in order) that `correction` corrects, as
    (its index, its corrected text); None when it corrects none of them."""
    if not is_correction(correction):
        return None
    named_old = set(_NEGATED.findall(correction))
    new = [(v, k) for v, k in _values(correction) if v not in named_old]
    if not new:
        return None
    for index in range(len(earlier) - 1, -1, -1):
        text = earlier[index]
        for old in _values(text):
            value = _replacement(old, named_old, new)
            if value is not None:
                fixed = re.sub(rf"(?<![A-Za-z0-9_.:/-]){re.escape(old[0])}(?![0-9.:])", value, text, count=1)
                return index, fixed
    return None
