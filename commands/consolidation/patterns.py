"""Pattern mining (seed: consolidation, "模式挖掘（连续 3+ 条同类型记忆 → 提取 pattern）").

Our rule: when one topic cluster holds at least ``min_members`` memories of one category, the
cluster yields one L2 "pattern" memory derived from them. Method, per cluster:

1. Eligible members: the cluster's memories known in ``members`` that are not themselves
   patterns (kind L2 or category ``pattern``), each counted once.
2. They are grouped by (namespace, category): a pattern is written into one namespace and never
   mixes two namespaces (agents' private data). The largest group with ``min_members`` or more
   wins (ties: category name, then namespace); at most one plan per cluster. The first
   ``max_members`` members in cluster order (the closest to the centroid) are kept.
3. The plan is skipped when a stored pattern (``existing``) -- or a plan of this run -- already
   covers at least half of its members: repeated runs do not write the same pattern twice.
4. Content, without an LLM: the category and the count, the terms at least two members share,
   and up to three example contents. Terms come from the project's tokenizer
   (``projections.text.lexical``): latin words are compared by stem and shown as written; CJK text
   gives overlapping bigrams, and bigrams shared by the same members that follow each other in
   their text are joined back into the longer word (``部署``+``署到``+``到预`` -> ``部署到预``).
   A bigram that overlaps a more widely shared one (``用中`` next to ``中文``) most likely
   straddles two words and is dropped. Single characters are not terms.

The memory id is deterministic (a hash of the sorted member ids), so a replay or a retry writes
the same memory. Pure and deterministic.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from projections.text.lexical import terms, tokens

__all__ = ["PatternMember", "PatternPlan", "mine_patterns", "pattern_id", "shared_terms", "summarize"]

MAX_CONTENT: Final = 1000
MAX_TERMS: Final = 5
MAX_EXAMPLES: Final = 3
EXAMPLE_CHARS: Final = 80
_CJK_NAMES: Final = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL")


@dataclass(frozen=True, slots=True)
class PatternMember:
    memory_id: str
    namespace: str
    category: str  # fact | decision | preference | constraint | pattern
    content: str
    kind: str = "L1"  # L1 | L2 | L3; L2 "pattern" memories never count as members


@dataclass(frozen=True, slots=True)
class PatternPlan:
    cluster_id: int
    namespace: str
    category: str
    member_ids: tuple[str, ...]  # sorted
    content: str
    memory_id: str  # "pattern-" + first 16 hex of sha256(",".join(member_ids))


def pattern_id(member_ids: Sequence[str]) -> str:
    """The deterministic id of the pattern memory over `member_ids`."""
    return "pattern-" + hashlib.sha256(",".join(sorted(member_ids)).encode()).hexdigest()[:16]


def _is_cjk(token: str) -> bool:
    return unicodedata.name(token[0], "").startswith(_CJK_NAMES)


def _member_terms(content: str) -> dict[str, str]:
    """The terms of one content: {comparison key: how it is shown}."""
    out: dict[str, str] = {}
    for tok in tokens(content):
        if len(tok) < 2:
            continue
        if _is_cjk(tok):
            out.setdefault(tok, tok)
        else:
            stem = terms(tok)
            if stem:
                out.setdefault(stem[0], tok)
    return out


def _drop_straddling(shared: dict[str, frozenset[int]]) -> dict[str, frozenset[int]]:
    """Drop a CJK bigram ``ab`` when a bigram ending in ``a`` or starting with ``b`` is shared
    by more members: it most likely straddles two words (``用中`` in ``用中文``)."""
    by_end: dict[str, int] = {}
    by_start: dict[str, int] = {}
    for t, s in shared.items():
        if len(t) == 2 and _is_cjk(t):
            by_end[t[1]] = max(by_end.get(t[1], 0), len(s))
            by_start[t[0]] = max(by_start.get(t[0], 0), len(s))
    return {t: s for t, s in shared.items()
            if not (len(t) == 2 and _is_cjk(t) and max(by_end.get(t[0], 0), by_start.get(t[1], 0)) > len(s))}


def _join_chains(shared: dict[str, frozenset[int]], texts: Sequence[str]) -> dict[str, frozenset[int]]:
    """Join the CJK bigrams held by the same members that follow each other in the first
    holder's text into one word, when every holder's text contains that word."""
    out = {t: s for t, s in shared.items() if not _is_cjk(t)}
    groups: dict[frozenset[int], set[str]] = {}
    for t, s in shared.items():
        if _is_cjk(t):
            groups.setdefault(s, set()).add(t)
    for holders, grams in groups.items():
        text, i = texts[min(holders)], 0
        used: set[str] = set()
        while i < len(text) - 1:
            j = i
            while j < len(text) - 1 and text[j : j + 2] in grams:
                j += 1
            word = text[i : j + 1]
            if j > i and all(word in texts[k] for k in holders):
                out[word] = out.get(word, frozenset()) | holders
                used.update(text[p : p + 2] for p in range(i, j))
            i = max(j, i + 1)
        out.update((g, holders) for g in grams - used)
    return out


def shared_terms(contents: Sequence[str], limit: int = MAX_TERMS) -> list[str]:
    """Up to `limit` terms found in at least two of `contents`, most widely shared first (then
    in the order they first appear)."""
    per_member = [_member_terms(c) for c in contents]
    shown: dict[str, str] = {}
    holders: dict[str, set[int]] = {}
    for i, found in enumerate(per_member):
        for key, surface in found.items():
            shown.setdefault(key, surface)
            holders.setdefault(key, set()).add(i)
    shared = _drop_straddling({shown[k]: frozenset(v) for k, v in holders.items() if len(v) >= 2})
    texts = [unicodedata.normalize("NFKC", c).lower() for c in contents]
    shared = _join_chains(shared, texts)
    ranked = sorted(shared, key=lambda t: (-len(shared[t]), min(shared[t]), texts[min(shared[t])].find(t), t))
    return ranked[:limit]


def _example(content: str) -> str:
    text = " ".join(content.split())
    return text if len(text) <= EXAMPLE_CHARS else text[: EXAMPLE_CHARS - 1] + "…"


def summarize(category: str, contents: Sequence[str]) -> str:
    """The content of a pattern memory over `contents` (≤ 1000 characters)."""
    about = shared_terms(contents)
    head = f"Recurring {category} ({len(contents)} memories)" + (f" about {', '.join(about)}" if about else "")
    examples = "; ".join(f'"{_example(c)}"' for c in contents[:MAX_EXAMPLES])
    text = f"{head}: {examples}"
    return text if len(text) <= MAX_CONTENT else text[: MAX_CONTENT - 1] + "…"


def _best_group(ids: Sequence[str], members: Mapping[str, PatternMember],
                min_members: int) -> list[PatternMember] | None:
    groups: dict[tuple[str, str], list[PatternMember]] = {}
    seen: set[str] = set()
    for mid in ids:
        m = members.get(mid)
        if m is None or mid in seen or m.kind == "L2" or m.category == "pattern":
            continue
        seen.add(mid)
        groups.setdefault((m.namespace, m.category), []).append(m)
    big = [(ns, cat) for (ns, cat), g in groups.items() if len(g) >= min_members]
    if not big:
        return None
    ns, cat = min(big, key=lambda k: (-len(groups[k]), k[1], k[0]))
    return groups[(ns, cat)]


def mine_patterns(clusters: Sequence[tuple[int, Sequence[str]]], members: Mapping[str, PatternMember], *,
                  existing: Sequence[Sequence[str]] = (), min_members: int = 3,
                  max_members: int = 20) -> list[PatternPlan]:
    """The pattern memories to write, at most one per cluster, in cluster order (module doc)."""
    if not 1 <= min_members <= max_members:
        raise ValueError("need 1 <= min_members <= max_members")
    covering: dict[str, list[int]] = {}  # member id -> the patterns (by index) that cover it
    for n, pattern in enumerate(existing):
        for mid in set(pattern):
            covering.setdefault(mid, []).append(n)
    known = len(existing)
    plans: list[PatternPlan] = []
    for cluster_id, ids in clusters:
        group = _best_group(ids, members, min_members)
        if group is None:
            continue
        kept = group[:max_members]
        member_ids = tuple(sorted(m.memory_id for m in kept))
        overlap = Counter(n for mid in member_ids for n in covering.get(mid, ()))
        if any(2 * shared >= len(member_ids) for shared in overlap.values()):
            continue
        for mid in member_ids:  # this run's plans count as stored patterns for the next clusters
            covering.setdefault(mid, []).append(known)
        known += 1
        plans.append(PatternPlan(cluster_id, kept[0].namespace, kept[0].category, member_ids,
                                 summarize(kept[0].category, [m.content for m in kept]), pattern_id(member_ids)))
    return plans
