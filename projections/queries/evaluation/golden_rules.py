"""Rule-based golden queries (seed 6.1: "4 kinds × 3 difficulty levels = 12 queries").

Pure and deterministic: the same memories and seed give the same queries. An LLM generator can
replace this later; its output goes into the same `eval.golden_set_created` event.

- easy: a verbatim salient phrase — the longest clause of the content (clipped);
- medium: the salient keywords reordered (most salient first) inside a question template;
- hard: a paraphrase-ish subset of the content words — every other keyword, shuffled, no template.

Kinds are decay classes (system_fact, user_pref, proj_context, tool_usage, code_snippet), visited
in that order; each (kind, difficulty) slot takes the next memory of that kind in a seeded order.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from projections.queries.evaluation.metrics import EvalQuery

KINDS = ("system_fact", "user_pref", "proj_context", "tool_usage", "code_snippet")
DIFFICULTIES = ("easy", "medium", "hard")
DEFAULT_QUERIES = len(DIFFICULTIES) * 4

_CLAUSE = re.compile(r"[,.;:!?，。；：！？、\n()（）\[\]【】\"“”]+")
_LATIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+#/-]*[A-Za-z0-9+#]|[A-Za-z0-9]")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_CJK_SPLIT = re.compile(r"[的是在了和与及或用被把为也都就而并很还要会从对向将这那个]+")
STOPWORDS = frozenset("""a an and are as at be but by for from has have in is it its of on or that the this to
was were will with which who what when where how why not no do does did can could should would i you he she we
they them his her our your their my me us than then there here so if into about also just very more most""".split())
MAX_EASY_WORDS = 10
MAX_EASY_CJK = 24


@dataclass(frozen=True, slots=True)
class SourceMemory:
    memory_id: str
    content: str
    decay_class: str
    agent_id: str = ""
    namespace: str = ""


def has_cjk(text: str) -> bool:
    return _CJK_RUN.search(text) is not None


def keywords(content: str) -> list[str]:
    """Salient words in order of appearance: latin words (not stopwords, ≥ 2 chars, or numbers)
    and CJK segments (runs split at function characters, ≥ 2 chars), distinct."""
    found: list[tuple[int, str]] = []
    for m in _LATIN.finditer(content):
        w = m.group(0)
        if (len(w) >= 2 and w.lower() not in STOPWORDS) or w.isdigit():
            found.append((m.start(), w))
    for m in _CJK_RUN.finditer(content):
        offset = m.start()
        for part in _CJK_SPLIT.split(m.group(0)):
            if len(part) >= 2:
                found.append((offset + m.group(0).find(part), part))
    out: dict[str, None] = {}
    for _, w in sorted(found):
        out.setdefault(w, None)
    return list(out)


def _salience(word: str) -> tuple[int, int]:
    """Longer words (and numbers, names with digits) say more about a memory."""
    return (1 if any(c.isdigit() for c in word) else 0, len(word) * (2 if has_cjk(word) else 1))


def easy(content: str) -> str:
    clauses = [c.strip() for c in _CLAUSE.split(content) if c.strip()]
    best = max(clauses or [content.strip()], key=lambda c: (len(keywords(c)), len(c)))
    if has_cjk(best):
        return best[:MAX_EASY_CJK].strip()
    return " ".join(best.split()[:MAX_EASY_WORDS])


def medium(content: str) -> str:
    words = sorted(keywords(content), key=_salience, reverse=True)[:4]
    if not words:
        return content.strip()[:40]
    if has_cjk(content):
        return f"关于{'、'.join(words)}的情况是什么？"
    return f"What do we know about {' '.join(words)}?"


def hard(content: str, rng: random.Random) -> str:
    words = keywords(content)
    subset = words[1::2] or words[:1]
    subset = subset[:5]
    rng.shuffle(subset)
    joiner = "" if subset and all(has_cjk(w) for w in subset) else " "
    return joiner.join(subset) or content.strip()[:20]


def _order(memories: Iterable[SourceMemory], seed: int) -> list[SourceMemory]:
    def key(m: SourceMemory) -> str:
        return hashlib.sha256(f"{seed}:{m.memory_id}".encode()).hexdigest()

    return sorted(memories, key=key)


def generate(memories: Sequence[SourceMemory], n: int = DEFAULT_QUERIES, seed: int = 0) -> list[EvalQuery]:
    """Up to `n` queries, slots (kind × difficulty) filled round-robin; no (memory, difficulty) twice."""
    by_kind: dict[str, list[SourceMemory]] = {}
    for m in _order(memories, seed):
        by_kind.setdefault(m.decay_class if m.decay_class in KINDS else "other", []).append(m)
    kinds = [k for k in (*KINDS, "other") if k in by_kind]
    rng = random.Random(seed)
    used: set[tuple[str, str]] = set()
    cursor = {k: 0 for k in kinds}
    out: list[EvalQuery] = []
    while len(out) < n:
        progress = False
        for kind in kinds:
            for difficulty in DIFFICULTIES:
                if len(out) >= n:
                    break
                pool = by_kind[kind]
                for _ in range(len(pool)):
                    mem = pool[cursor[kind] % len(pool)]
                    cursor[kind] += 1
                    if (mem.memory_id, difficulty) not in used:
                        break
                else:
                    continue
                used.add((mem.memory_id, difficulty))
                text = easy(mem.content) if difficulty == "easy" else medium(mem.content) \
                    if difficulty == "medium" else hard(mem.content, rng)
                out.append(EvalQuery(text, (mem.memory_id,), kind, mem.agent_id, difficulty))
                progress = True
        if not progress:
            break
    return out


def golden_set_id(seed: int, queries: Sequence[EvalQuery]) -> str:
    h = hashlib.sha256(str(seed).encode())
    for q in queries:
        h.update(q.query.encode() + b"\x00" + ",".join(q.expected_ids).encode() + b"\x01")
    return "gs-" + h.hexdigest()[:16]
