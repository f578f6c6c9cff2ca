"""The seed's hard rules (3.1), before any extraction: an episode is skipped when

1. it is a task whose status is `skipped` or `error` (`task_skipped` / `task_error`);
2. it has no user message (`no_user_message`);
3. nothing in it is worth extracting (the extractor finds no candidate): only pleasantries and
   chit-chat (`chit_chat`), or only questions about general knowledge (`knowledge_qa`);
4. their information density is below 0.3 (`low_density`): the share of content words (not stop
   words, fillers or pleasantries; CJK characters counted one by one) among all words of the user turns.

Pure: a function of the episode alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from commands.distill.cues import STOP_EN, STOP_ZH
from commands.distill.sentences import CJK_CHAR, words
from commands.distill.statements import Statement

MIN_DENSITY = 0.3


@dataclass(frozen=True, slots=True)
class Verdict:
    skip: bool
    reason: str = ""
    density: float = 0.0


def information_density(texts: Sequence[str]) -> float:
    """Content words / all words over `texts` (0.0 when there are no words)."""
    total = content = 0
    for text in texts:
        for w in words(text):
            total += 1
            if CJK_CHAR.fullmatch(w):
                content += w not in STOP_ZH
            else:
                content += w not in STOP_EN and not w.isdigit() or (w.isdigit() and len(w) > 1)
    return content / total if total else 0.0


def hard_rules(kind: str, status: str, turns: Sequence[dict[str, Any]], statements: Sequence[Statement],
               extractable: bool) -> Verdict:
    """The verdict for an episode, given its statements (`commands.distill.statements.read_statements`)
    and whether the rule-based extractor finds anything in it."""
    user_texts = [t["content"] for t in turns if t["role"] == "user"]
    density = round(information_density(user_texts), 3)
    if kind == "task" and status in ("skipped", "error"):
        return Verdict(True, f"task_{status}", density)
    if not user_texts:
        return Verdict(True, "no_user_message", density)
    user = [s for s in statements if s.role == "user"]
    if not extractable:
        # a question of substance ("how does HTTP/2 multiplex?"), not "you?"
        only_questions = all(s.question or s.pleasantry for s in user) and any(
            s.question and s.content_words >= 2 for s in user)
        return Verdict(True, "knowledge_qa" if only_questions else "chit_chat", density)
    if density < MIN_DENSITY:
        return Verdict(True, "low_density", density)
    return Verdict(False, "", density)
