"""Auto-resolution policy (seed 3.3.2): a detected conflict that the rules of
`commands.conflicts.auto_resolution` can settle is settled at once — `conflict.resolved` with the rule
that decided it, and the loser `memory.deprecated` with reason `conflict:<id>` — so no one is asked;
the others stay open (`GET /api/v1/conflicts`). A conflict already resolved, or whose memories are
gone, is left alone.

With an LLM configured (`LLM_ENDPOINT`), the model's verdict comes first
(`commands.conflicts.llm_verdict`): `same` / `compatible` close the conflict as a false alarm
(keep_both, rule `llm:same` / `llm:compatible`), `updates` lets the later memory win (latest_wins,
rule `llm:updates`), `contradicts` or no verdict leaves it to the rules. One policy, so the model's
verdict and the rules never race.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog

from commands.conflicts.auto_resolution import AutoVerdict, decide as auto_decide
from commands.conflicts.llm_verdict import SYSTEM_PROMPT, parse_relation, prompt
from commands.llm import BudgetExhausted, LLMError
from events.catalogue import ConflictDetected, ConflictResolved, MemoryDeprecated, new_event
from events.envelope import Event
from projections.memories.scores import ms_of

log = structlog.get_logger(__name__)


@dataclass
class ConflictAutoResolvePolicy:
    memories: Any                    # projections.memories.reader.MemoriesReader
    conflicts: Any                   # projections.conflicts.reader.ConflictsReader
    store: Any                       # events.redis.store.EventStore (versions)
    llm: Any = None                  # commands.llm.ChatClient: its verdict first, when configured
    name: str = "conflict_auto_resolve"
    reads: tuple[str, ...] = ("memories", "conflicts")

    def wants(self, event: Event) -> bool:
        return isinstance(event.data, ConflictDetected) and len(set(event.data.memory_ids)) == 2

    async def decide(self, event: Event) -> list[Event]:
        d: ConflictDetected = event.data
        current = await self.conflicts.get(d.conflict_id)
        if current is None or current["status"] != "open":
            return []
        ids = list(dict.fromkeys(d.memory_ids))
        rows = await self.memories.arows(ids)
        if len(rows) < 2:
            return []
        a, b = rows[ids[0]], rows[ids[1]]
        verdict = await self._llm_verdict(d.conflict_id, a, b)
        if verdict is None:
            profile = await self.conflicts.profile(d.kind, a.get("source", ""), b.get("source", ""))
            verdict = auto_decide(d.kind, a, b, profile)
        if verdict is None:
            return []
        ns = d.namespace
        if not verdict.loser:   # a false alarm: both stay
            return [new_event(ConflictResolved(d.conflict_id, ns, verdict.strategy, "", "", verdict.rule, tuple(ids)),
                              ns=ns, agent="system", by="reaction")]
        loser = (await self.store.memory_indexes([verdict.loser])).get(verdict.loser)
        if loser is None or loser.deleted or loser.merged_into:
            return []
        return [new_event(ConflictResolved(d.conflict_id, ns, verdict.strategy, verdict.winner, verdict.loser,
                                           verdict.rule, tuple(ids), rows[verdict.winner].get("source", ""),
                                           rows[verdict.loser].get("source", "")),
                          ns=ns, agent="system", by="reaction"),
                new_event(MemoryDeprecated(verdict.loser, loser.namespace, loser.version + 1,
                                           f"conflict:{d.conflict_id}"), ns=loser.namespace, agent="system",
                          by="reaction")]

    async def _llm_verdict(self, conflict_id: str, new: dict[str, Any], old: dict[str, Any]) -> AutoVerdict | None:
        """The model's verdict on (the newer memory, the older one), or None: no model, or no usable answer."""
        if self.llm is None:
            return None
        try:
            relation = parse_relation(await self.llm.complete(SYSTEM_PROMPT, prompt(old, new)))
        except BudgetExhausted as exc:
            log.warning("conflict_llm.budget", conflict_id=conflict_id, error=str(exc))
            return None
        except (LLMError, ValueError) as exc:
            log.warning("conflict_llm.failed", conflict_id=conflict_id, error=str(exc)[:300])
            return None
        if relation in ("same", "compatible"):
            return AutoVerdict("keep_both", f"llm:{relation}", "", "")
        if relation == "updates":
            late, early = (new, old) if (ms_of(new.get("timestamp", "")), new["id"]) > \
                (ms_of(old.get("timestamp", "")), old["id"]) else (old, new)
            return AutoVerdict("latest_wins", "llm:updates", late["id"], early["id"])
        return None
