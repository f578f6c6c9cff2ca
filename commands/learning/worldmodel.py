"""The L3 world model (seed 6.6): entities E and their interactions I from the knowledge graph
(`projections.graph.world`), constraints C from the live `constraint` memories.

A constraint is **hard** when it is tagged `hard`, or says so: must / must not / never / do not / don't /
cannot / forbidden / at most / no more than, or 必须 / 不要 / 不能 / 禁止 / 不得 / 不可 / 不超 / 严禁 / 务必;
**soft** when tagged `soft` or otherwise (a preference, a habit). The seed's examples: "models must fit
the 3050's VRAM" and "new services do not use ports 3000/6379/..." are hard, "牧尘 dislikes filler" is soft.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

HARD_WORDS = re.compile(
    r"\b(must|must not|never|do not|don't|cannot|can't|forbidden|prohibited|at most|no more than|mandatory)\b"
    r"|必须|不要|不能|禁止|不得|不可|不超|严禁|务必", re.IGNORECASE)
MAX_CONSTRAINTS = 200


def is_hard(content: str, tags: Sequence[str]) -> bool:
    lowered = {t.lower() for t in tags}
    if "soft" in lowered:
        return False
    return "hard" in lowered or HARD_WORDS.search(content) is not None


def model_of(entities: list[dict[str, Any]], interactions: list[dict[str, Any]],
             constraint_rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    constraints = [{"text": r["content"], "hard": is_hard(r["content"], list(r.get("tags") or [])),
                    "memory_id": r["id"], "namespace": r["namespace"]} for r in constraint_rows[:MAX_CONSTRAINTS]]
    return {"entities": entities, "interactions": interactions, "constraints": constraints}
