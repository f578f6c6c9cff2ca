"""Sentences and words of an episode's turns, for Chinese and English alike (pure, no model).

Sentences end at 。！？；!? and line breaks, and at '.' followed by white space (so versions,
paths, decimals and file names such as `v2.1`, `/etc/nginx.conf`, `3.5` stay whole, and so do
abbreviations such as `no. 17`, `e.g.`, `Dr.`). Words are
Latin/digit runs (lower-cased) and single CJK characters: density and cue tests count both scripts
alike without a dictionary.
"""

from __future__ import annotations

import re
from typing import Final

_CJK: Final = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_SENTENCE_END: Final = re.compile(
    r"(?<=[。！？；!?])\s*|\n+|(?<=[~～])\s+|(?<=[.…])(?<!\bno\.)(?<!\bvs\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)"
    r"(?<!\bmr\.)(?<!\bmrs\.)(?<!\bdr\.)(?<!\bst\.)(?<!\bNo\.)(?<!\bDr\.)(?<!\bMr\.)(?<!\bSt\.)\s+")
_WORD: Final = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+(?:['’.\-/:][^\W_{_CJK}]+)*")
CJK_CHAR: Final = re.compile(rf"[{_CJK}]")
MAX_SENTENCE_CHARS: Final = 600


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, stripped, non-empty; an over-long one is cut at a comma or space."""
    out: list[str] = []
    for part in _SENTENCE_END.split(text):
        part = part.strip(" \t\r\n-•*>")
        if not part:
            continue
        while len(part) > MAX_SENTENCE_CHARS:
            cut = max(part.rfind("，", 0, MAX_SENTENCE_CHARS), part.rfind(", ", 0, MAX_SENTENCE_CHARS),
                      part.rfind(" ", 0, MAX_SENTENCE_CHARS))
            cut = cut if cut > 0 else MAX_SENTENCE_CHARS
            out.append(part[:cut].strip())
            part = part[cut:].lstrip("，, ")
        if part:
            out.append(part)
    return out


def words(text: str) -> list[str]:
    """Latin/digit words (lower-cased; `v2.1`, `/etc/x.conf`, `don't` stay whole) and CJK characters."""
    return [w.lower() for w in _WORD.findall(text)]


def is_chinese(text: str) -> bool:
    """Mostly Chinese: at least as many CJK characters as Latin words."""
    return len(CJK_CHAR.findall(text)) >= len(re.findall(r"[A-Za-z]{2,}", text))
