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
_CJK_UNITS: Final = "岁年月日号天周点分秒个只台块元万千百亿次层楼斤克米度寸码升倍人位张本件条"
_LATIN_UNITS: Final = (
    "s|sec|secs|seconds?|ms|min|mins|minutes?|h|hr|hrs|hours?|days?|weeks?|months?|years?|yo|am|pm|kg|g|lbs?|km|mi|"
    "miles?|m|cm|mm|kb|mb|gb|tb|k|x|usd|eur|gpus?|cpus?|cores?|people|kids|users|nodes|servers|disks|drives|"
    "times|mg|mcg|ml|l|percent")
_VALUE: Final = re.compile(
    rf"(?<![A-Za-z0-9_.:/-])(\d+(?:[.:]\d+)*)(%|[{_CJK_UNITS}]|[A-Za-z]+|\s(?:{_LATIN_UNITS})\b)?", re.IGNORECASE)
_FUNCTION_WORDS: Final = frozenset(
    "the and but was were are has have had our your their its it's that this with from for not now just "
    "sorry wait actually meant mean correction oops hold on".split())
_NEGATED: Final = re.compile(r"(?:\bnot|\binstead of|\brather than|不是|而不是)\s*(\d+(?:[.:]\d+)*)", re.IGNORECASE)


def _kind(value: str, unit: str) -> str:
    """A clock time, an IP address, a dotted number (a version, a decimal), else its unit, else ""."""
    if re.fullmatch(r"\d{1,2}:\d{2}", value):
        return "time"
    if re.fullmatch(r"\d+(?:\.\d+){3}", value):
        return "ip"
    if unit:
        return unit.strip().lower()
    return "dotted" if "." in value else ""


def _values(text: str) -> list[tuple[str, str]]:
    """(value, kind) of each number (`_kind`)."""
    return [(value, _kind(value, unit)) for value, unit in _VALUE.findall(text)]


def is_correction(text: str) -> bool:
    return bool(CORRECTION_LEAD.search(text) or _NEGATED.search(text))


def says_nothing_else(correction: str) -> bool:
    """A correction that, once folded into the memory it corrects, adds nothing ("sorry, its march 18
    not 8. typo"): at most one word besides its values and correction words."""
    rest = _NEGATED.sub(" ", CORRECTION_LEAD.sub(" ", correction))
    rest = _VALUE.sub(" ", rest)
    return len(_anchors(rest) - {"typo", "its"}) <= 1 and not re.search(r"[\u4e00-\u9fff]{3,}", rest)


def _anchors(text: str) -> set[str]:
    """Words that name what a value is about: Latin words of 3+ letters and Chinese character pairs."""
    latin = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z-]{2,}", text)} - _FUNCTION_WORDS
    pairs = {run[i:i + 2] for run in re.findall(r"[\u4e00-\u9fff]{2,}", text) for i in range(len(run) - 1)}
    return latin | pairs


def _replacement(old: tuple[str, str], named_old: set[str], new: Sequence[tuple[str, str]],
                 shared_anchor: bool) -> str | None:
    value, kind = old
    if value in named_old:
        same = [v for v, k in new if k == kind] or [v for v, _ in new]
        return same[0] if len(set(same)) == 1 else None
    if value in {v for v, _ in new}:
        return None
    if not kind:   # a bare number ("Redis 是 5.0" -> "线上是6.2") only where both name the same thing
        bare = {v for v, k in new if not k}
        return bare.pop() if shared_anchor and len(bare) == 1 else None
    alike = {v for v, k in new if k == kind}
    return alike.pop() if len(alike) == 1 else None


def correct(earlier: Sequence[str], correction: str) -> tuple[int, str] | None:
    """The latest of `earlier` (memories of the same episode, in order) that `correction` corrects, as
    (its index, its corrected text); None when it corrects none of them."""
    if not is_correction(correction):
        return None
    named_old = set(_NEGATED.findall(correction))
    new = [(v, k) for v, k in _values(correction) if v not in named_old]
    if not new:
        return None
    anchors = _anchors(correction)
    for index in range(len(earlier) - 1, -1, -1):
        text = earlier[index]
        shared = bool(anchors & _anchors(text))
        for old in _values(text):
            value = _replacement(old, named_old, new, shared)
            if value is not None:
                fixed = re.sub(rf"(?<![A-Za-z0-9_.:/-]){re.escape(old[0])}(?![0-9.:])", value, text, count=1)
                return index, fixed
    return None
