"""Distillation quality backtrace (seed 3.5 flow 5 step 4, "质量回溯"): how much of an episode a
distilled memory kept.

A stratified sample of distilled memories (up to 5 each: the newest, core, useful and not useful
ones; 20 in all) is sent to the LLM, which reconstructs the conversation from the memory alone
(L1 -> L0'). The embedding cosine of the episode (L0) and the reconstruction says how much was lost:
below :data:`LOSSY_BELOW` (0.8) the memory lost too much; below :data:`REDISTILL_BELOW` (0.7) its
episode should be distilled again (listed in the report; re-distillation itself is not run here).
Without an LLM the step is `not_run`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import orjson

SAMPLE_PER_STRATUM: Final = 5
LOSSY_BELOW: Final = 0.8
REDISTILL_BELOW: Final = 0.7
SYSTEM: Final = ("You are given one memory an assistant distilled from a conversation. Reconstruct the "
                 "conversation it most likely came from, as faithfully as the memory allows, without inventing "
                 'details. Answer JSON: {"conversation": "<the reconstructed turns as plain text>"}')


@dataclass(frozen=True, slots=True)
class Sampled:
    memory_id: str
    stratum: str          # fresh | core | useful | not_useful
    content: str
    episode: str          # the episode's turns as text


def stratified(rows: list[dict[str, Any]], per_stratum: int = SAMPLE_PER_STRATUM) -> list[tuple[str, dict[str, Any]]]:
    """(stratum, row) pairs: each memory at most once, strata in the seed's order, deterministic."""
    taken: set[str] = set()
    strata = [
        ("fresh", sorted(rows, key=lambda r: (r.get("timestamp") or "", r["id"]), reverse=True)),
        ("core", sorted((r for r in rows if r.get("tier") == "core"), key=lambda r: r["id"])),
        ("useful", sorted((r for r in rows if int(r.get("useful_count") or 0) > 0),
                          key=lambda r: (-int(r.get("useful_count") or 0), r["id"]))),
        ("not_useful", sorted((r for r in rows if int(r.get("not_useful_count") or 0) > 0),
                              key=lambda r: (-int(r.get("not_useful_count") or 0), r["id"]))),
    ]
    out = []
    for name, ordered in strata:
        n = 0
        for r in ordered:
            if n >= per_stratum:
                break
            if r["id"] not in taken:
                taken.add(r["id"])
                out.append((name, r))
                n += 1
    return out


def episode_text(turns: list[dict[str, Any]]) -> str:
    return "\n".join(f"{t.get('role', '')}: {t.get('content', '')}" for t in turns)[:8000]


async def reconstruct(llm: Any, content: str) -> str:
    """The LLM's reconstruction of the conversation behind `content` (LLMError, ValueError on failure)."""
    answer = orjson.loads(await llm.complete(SYSTEM, content))
    text = answer.get("conversation") if isinstance(answer, dict) else None
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the model's answer has no conversation")
    return text


async def backtrace(llm: Any, embedder: Any, sample: list[Sampled]) -> dict[str, Any]:
    """Reconstruct each sampled memory's episode and score it (the report's `backtrace` entry)."""
    rebuilt = [await reconstruct(llm, s.content) for s in sample]
    if not sample:
        return {"sampled": 0, "mean_cosine": None, "lossy": [], "redistill": [], "by_stratum": {}}
    vectors = await asyncio.to_thread(embedder.embed, [s.episode for s in sample] + rebuilt)
    a, b = np.asarray(vectors[:len(sample)]), np.asarray(vectors[len(sample):])
    cos = (a * b).sum(axis=1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-9)
    by: dict[str, list[float]] = {}
    for s, c in zip(sample, cos):
        by.setdefault(s.stratum, []).append(float(c))
    return {"sampled": len(sample), "mean_cosine": round(float(cos.mean()), 4),
            "lossy": [s.memory_id for s, c in zip(sample, cos) if c < LOSSY_BELOW],
            "redistill": [s.memory_id for s, c in zip(sample, cos) if c < REDISTILL_BELOW],
            "by_stratum": {k: round(sum(v) / len(v), 4) for k, v in sorted(by.items())}}
