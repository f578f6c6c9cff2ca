"""Which ephemeral memories go (seed 2.7): those of a closed session (`session_closed`), and those older
than `ZHIYI_EPHEMERAL_TTL_S` (`ephemeral_expired`). Pure over the live rows
(`projections.queries.live_memories.live_rows`), like the forget run's rules."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable

from commands.rules.forgetting import ForgetCandidate

EPHEMERAL_SUFFIX = "-ephemeral"
DEFAULT_TTL_S = 86_400


def _ms(timestamp: str) -> int:
    return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000)


def expired(rows: Iterable[dict[str, Any]], now_ms: int, ttl_s: float) -> list[ForgetCandidate]:
    """Live memories of ephemeral namespaces committed at least `ttl_s` before `now_ms`, oldest first;
    none when `ttl_s` is 0 (no expiry)."""
    if ttl_s <= 0:
        return []
    cutoff = now_ms - int(ttl_s * 1000)
    due = [r for r in rows if r["namespace"].endswith(EPHEMERAL_SUFFIX) and r["timestamp"]
           and _ms(r["timestamp"]) <= cutoff]
    return [ForgetCandidate(r["id"], r["namespace"], r["version"], "ephemeral_expired", r["content"])
            for r in sorted(due, key=lambda r: (r["timestamp"], r["id"]))]


def of_session(rows: Iterable[dict[str, Any]], members: Iterable[str]) -> list[ForgetCandidate]:
    """The live memories among a closed session's members."""
    wanted = set(members)
    return [ForgetCandidate(r["id"], r["namespace"], r["version"], "session_closed", r["content"])
            for r in sorted(rows, key=lambda r: r["id"]) if r["id"] in wanted]
