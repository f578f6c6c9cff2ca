"""An LLM's verdict on a detected conflict (DESIGN §6: conflict verdicts are the LLM's, recorded as
events so replay never calls it). The offline pair judge flags pairs generously; with `LLM_ENDPOINT`
set, the model reads both memories and says what the newer is to the older: `contradicts` (a
conflict: the automatic rules or a person settle it), `updates` (the later wins), `same` or
`compatible` (no conflict: kept both). An unusable answer, a refusal or a spent budget gives no
verdict, and the rules decide as without a model.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

RELATIONS: Final = ("contradicts", "updates", "same", "compatible")
MAX_CHARS: Final = 2000
SYSTEM_PROMPT: Final = (
    "Two notes an AI agent stored were flagged as possibly contradicting each other. Decide what the NEWER "
    'note is to the OLDER one and answer with JSON only: {"relation": "<relation>", "reason": "<short>"}. '
    "relation is one of: contradicts (both cannot be true now, and nothing says the fact changed); updates "
    "(the newer says the fact changed, e.g. 'now', 'moved to', 'no longer'); same (they state the same fact); "
    "compatible (both can be true: different subjects, details, times or parts). Notes may be Chinese or "
    "English; compare their meaning, not their wording.")


def prompt(older: dict[str, Any], newer: dict[str, Any]) -> str:
    return orjson.dumps({"older": {"content": older["content"][:MAX_CHARS], "source": older.get("source", "")},
                         "newer": {"content": newer["content"][:MAX_CHARS], "source": newer.get("source", "")}},
                        option=orjson.OPT_INDENT_2).decode()


def parse_relation(answer: str) -> str:
    """The relation in the model's JSON answer; ValueError when there is none we know."""
    doc = orjson.loads(answer)
    relation = doc.get("relation") if isinstance(doc, dict) else None
    if not isinstance(relation, str) or relation.strip().lower() not in RELATIONS:
        raise ValueError(f"no known relation in the answer: {answer[:200]!r}")
    return relation.strip().lower()
