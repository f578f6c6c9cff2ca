"""Settling a conflict (seed 3.3.2): which memory wins under a strategy, as a pure decision.

Strategies: `ask_user` (a person names the `winner`), `latest_wins` (the later commit),
`primary_wins` (the memory the primary instance committed; until replicas exist every memory is
the primary's, so the later one wins), `keep_both` (both stay, no loser) and `auto_merge` (only
for a pair that states the same fact — an importance conflict —: the older is merged into the
later). The loser of latest_wins / primary_wins / ask_user is `memory.deprecated` with reason
`conflict:<id>`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from commands.errors import Conflict, InvalidCommand

STRATEGIES: Final = ("ask_user", "latest_wins", "primary_wins", "keep_both", "auto_merge")
MERGEABLE_KINDS: Final = ("importance",)


@dataclass(frozen=True, slots=True)
class Outcome:
    winner: str
    loser: str          # "" for keep_both
    merge: bool = False


def _later(a: dict[str, Any], b: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the later commit, the earlier): by commit time, then id."""
    ka, kb = (a.get("timestamp", ""), a["id"]), (b.get("timestamp", ""), b["id"])
    return (a, b) if ka > kb else (b, a)


def outcome(strategy: str, conflict: dict[str, Any], rows: dict[str, dict[str, Any]], winner: str = "") -> Outcome:
    """The winner and loser of `conflict` (a `ConflictsReader` row) under `strategy`."""
    if strategy not in STRATEGIES:
        raise InvalidCommand(f"strategy must be one of {', '.join(STRATEGIES)}", {"field": "strategy"})
    a_id, b_id = conflict["memory_ids"]
    if strategy == "ask_user":
        if winner not in (a_id, b_id):
            raise InvalidCommand("ask_user needs `winner`: one of the conflict's two memory ids",
                                 {"field": "winner", "memory_ids": [a_id, b_id]})
        return Outcome(winner, b_id if winner == a_id else a_id)
    if winner:
        raise InvalidCommand("`winner` is given only with strategy ask_user", {"field": "winner"})
    if strategy == "keep_both":
        return Outcome("", "")
    late, early = _later(rows[a_id], rows[b_id])
    if strategy == "auto_merge":
        if conflict["kind"] not in MERGEABLE_KINDS:
            raise Conflict(f"a {conflict['kind']} conflict cannot be merged safely: its memories say different "
                           "things (choose latest_wins, ask_user or keep_both)",
                           {"conflict_id": conflict["conflict_id"], "kind": conflict["kind"]})
        return Outcome(late["id"], early["id"], merge=True)
    return Outcome(late["id"], early["id"])   # latest_wins; primary_wins (one instance: the primary's)
