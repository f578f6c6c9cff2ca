"""The LLM extractor (seed 3.1) over the existing chat client: one call distils a batch of episodes.

The model is asked, for each episode, for the memories worth keeping, each with a category and the
seed's five scores in [0, 1] — IS (information significance), SU (strategic utility), PA (practical
applicability), VD (validation durability), RU (recall usability) — and, for decisions, the indices
of the facts (of the same episode) they rest on. A memory is kept when its weighted score
`0.20 IS + 0.20 SU + 0.15 PA + 0.25 VD + 0.20 RU` exceeds 0.7 or its VD exceeds 0.8 (seed 3.1's
threshold, applied per memory: one durable fact of an otherwise idle chat still counts). Scores are
recorded on the memory (`memory.committed.scores`, with `overall`); replay never calls the model.
An answer that is not the asked-for JSON raises ValueError (the caller falls back to the rules).
"""

from __future__ import annotations

from typing import Any, Final, Sequence

import orjson

from commands.distill.rule_extractor import Candidate
from events.vocabulary import CATEGORIES

WEIGHTS: Final = {"IS": 0.20, "SU": 0.20, "PA": 0.15, "VD": 0.25, "RU": 0.20}
KEEP_OVERALL: Final = 0.7
KEEP_VD: Final = 0.8
BATCH_SIZE: Final = 10
MAX_EPISODE_CHARS: Final = 12_000
MAX_MEMORIES: Final = 20
MAX_MEMORY_CHARS: Final = 2_000
LLM_CATEGORIES: Final = tuple(c for c in CATEGORIES if c != "pattern")
SOURCE: Final = "llm_distill"

SYSTEM_PROMPT: Final = (
    "You distil raw logs of an AI agent (conversations with a user, task logs) into long-term memories. "
    "For each episode, list the memories worth keeping for months: facts about the user, their machines, "
    "projects, people and plans; their preferences; decisions taken; constraints. Skip pleasantries, chit-chat, "
    "general knowledge the assistant explained, one-off requests, hedges nobody decided, and anything "
    "transient. Each memory is one self-contained sentence in the episode's language (Chinese stays Chinese), "
    "keeping names, numbers, paths and versions exactly as written; a correction keeps only the new value. "
    "Score each memory from 0 to 1 on IS (information significance), SU (strategic utility), PA (practical "
    "applicability), VD (validation durability: how long it stays true) and RU (recall usability). For a "
    "decision, list in depends_on the indices (within the same episode's memories) of the facts it rests on. "
    'Answer with JSON only: {"episodes": [{"index": <episode index>, "memories": [{"content": "...", '
    f'"category": "{"|".join(LLM_CATEGORIES)}", "scores": {{"IS": 0.0, "SU": 0.0, "PA": 0.0, "VD": 0.0, '
    '"RU": 0.0}, "depends_on": []}]}]}. An episode with nothing worth keeping has an empty memories list.')


def overall(scores: dict[str, float]) -> float:
    return sum(w * scores[k] for k, w in WEIGHTS.items())


def keep(scores: dict[str, float]) -> bool:
    return overall(scores) > KEEP_OVERALL or scores["VD"] > KEEP_VD


def batch_prompt(episodes: Sequence[Sequence[dict[str, Any]]]) -> str:
    """The user message: the episodes as JSON, each cut to MAX_EPISODE_CHARS of turns."""
    out = []
    for i, turns in enumerate(episodes):
        kept, size = [], 0
        for t in turns:
            size += len(t["content"])
            if size > MAX_EPISODE_CHARS:
                break
            kept.append({"role": t["role"], "content": t["content"]})
        out.append({"index": i, "turns": kept})
    return orjson.dumps({"episodes": out}).decode()


def _scores(raw: Any) -> dict[str, float] | None:
    if not isinstance(raw, dict):
        return None
    out = {}
    for k in WEIGHTS:
        v = raw.get(k)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        out[k] = min(1.0, max(0.0, float(v)))
    return out


def _memories(items: Any) -> list[Candidate]:
    """The kept memories of one episode's answer, depends_on re-indexed to the kept ones."""
    if not isinstance(items, list):
        return []
    parsed: list[tuple[int, str, str, dict[str, float], list[int]]] = []
    for i, item in enumerate(items[:MAX_MEMORIES]):
        if not isinstance(item, dict):
            continue
        content, scores = item.get("content"), _scores(item.get("scores"))
        if not isinstance(content, str) or not content.strip() or scores is None:
            continue
        category = str(item["category"]) if item.get("category") in LLM_CATEGORIES else "fact"
        deps = [d for d in item.get("depends_on") or [] if isinstance(d, int) and not isinstance(d, bool)]
        parsed.append((i, " ".join(content.split())[:MAX_MEMORY_CHARS], category, scores, deps))
    kept = [p for p in parsed if keep(p[3])]
    position = {p[0]: n for n, p in enumerate(kept)}
    return [Candidate(content, category, SOURCE,
                      tuple((k, round(v, 3)) for k, v in {**scores, "overall": overall(scores)}.items()),
                      tuple(position[d] for d in deps if d in position))
            for _, content, category, scores, deps in kept]


def parse_batch(answer: str, n: int) -> list[list[Candidate]]:
    """Each of the `n` episodes' kept memories from the model's answer (ValueError when the answer is
    not the asked-for JSON; an episode the answer leaves out yields nothing)."""
    try:
        doc = orjson.loads(answer)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    episodes = doc.get("episodes") if isinstance(doc, dict) else None
    if not isinstance(episodes, list):
        raise ValueError("no 'episodes' list in the answer")
    out: list[list[Candidate]] = [[] for _ in range(n)]
    for ep in episodes:
        if isinstance(ep, dict) and isinstance(ep.get("index"), int) and 0 <= ep["index"] < n:
            out[ep["index"]] = _memories(ep.get("memories"))
    return out


async def distill_batch_by_llm(llm: Any, episodes: Sequence[Sequence[dict[str, Any]]], *, charge: bool = True
                               ) -> list[list[Candidate]]:
    """One chat call for up to BATCH_SIZE episodes (their turns); raises the client's errors
    (commands.llm.LLMError, BudgetExhausted) and ValueError for an unusable answer."""
    answer = await llm.complete(SYSTEM_PROMPT, batch_prompt(episodes), charge=charge)
    return parse_batch(answer, len(episodes))


def extractor_name(llm: Any) -> str:
    return f"llm:{llm.model}"
