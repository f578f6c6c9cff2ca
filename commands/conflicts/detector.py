"""Conflicts caught at the door (plan E4.1): a new memory compared with its nearest stored ones.

At commit, before the append, the memories nearest the new content in its namespace and `shared`
(never a namespace the committer cannot read; `shared` alone for a `shared` commit) are read from
the serving index (`RecallService.neighbours`: the dense and the lexical top
:data:`CANDIDATES`) and compared with it (`commands.conflicts.compare`). Each contradiction becomes
a `conflict.detected` event appended with the commit itself, so `after=` the commit's position
shows it. The serving index is as fresh as the memories projection: a memory committed a moment
before may not be there yet (the merge reaction, which waits for the projection, still sees it).
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any, Final

from commands.conflicts.compare import CONFLICT, Side, Verdict, judge
from commands.conflicts.judge import PairModel
from commands.conflicts.text_signals import signals
from events.catalogue import ConflictDetected, new_event
from events.envelope import Event
from events.vocabulary import SHARED_NAMESPACE
from projections.consolidation.reader import is_mined

CANDIDATES: Final = 8
#: At most this many conflicts are reported for one new memory (the closest).
MAX_CONFLICTS: Final = 3
_CONFLICT_IDS: Final = uuid.uuid5(uuid.NAMESPACE_URL, "zhiyi:conflicts")


def conflict_id(new_id: str, old_id: str) -> str:
    """Deterministic per pair of memories (whichever came first), so a pair is one conflict."""
    a, b = sorted((new_id, old_id))
    return "cf-" + str(uuid.uuid5(_CONFLICT_IDS, f"{a}:{b}"))


def scope_of(namespace: str) -> list[str]:
    return list(dict.fromkeys([namespace, SHARED_NAMESPACE]))


def side_of(row: dict[str, Any]) -> Side:
    return Side(memory_id=row["id"], signals=signals(row["content"]), agent=row.get("agent_id", "") or "",
                source=row.get("source", "") or "", tier=row.get("tier", "normal") or "normal",
                distilled=bool(row.get("extractor")))


@dataclass(frozen=True, slots=True)
class Found:
    memory_id: str
    namespace: str
    verdict: Verdict
    conflict_id: str = ""
    old_distilled: bool = False


@dataclass
class ConflictDetector:
    recall: Any       # projections.queries.recall.service.RecallService
    model: PairModel  # the learned pair judge
    candidates: int = CANDIDATES

    async def related(self, new: Side, content: str, namespace: str,
                      exclude: frozenset[str] = frozenset()) -> list[Found]:
        """Every stored memory near `content` with what the new memory is to it (closest first)."""
        near = await self.recall.neighbours(content[:2000], scope_of(namespace), self.candidates)
        out = []
        for row, cosine in near:
            if row["id"] in exclude or row["id"] == new.memory_id or is_mined(row.get("extractor") or ""):
                continue   # a mined pattern summarises memories: it neither contradicts nor duplicates one
            old = side_of(row)
            verdict = judge(new, old, cosine, self.model)
            if verdict.relation != "none":
                out.append(Found(row["id"], row["namespace"], verdict, conflict_id(new.memory_id, row["id"]),
                                 old.distilled))
        out.sort(key=lambda f: (-f.verdict.cosine, f.memory_id))
        return out

    async def conflicts(self, commits: list[Event]) -> list[list[Found]]:
        """Each `memory.committed` event's conflicts with the stored memories (closest first). A scope
        with no memory in it is not searched (its commits' contents are not even embedded); the others'
        searches run concurrently, so the query embedder batches their contents."""
        scopes = {c.data.namespace for c in commits}
        held = dict(zip(scopes, await asyncio.gather(*(self.recall.holds(scope_of(ns)) for ns in scopes))))

        async def one(commit: Event) -> list[Found]:
            d = commit.data
            found = await self.related(new_side(commit), d.content, d.namespace)
            return [f for f in found if f.verdict.relation == CONFLICT][:MAX_CONFLICTS]

        out: list[list[Found]] = [[] for _ in commits]
        searched = [i for i, c in enumerate(commits) if held[c.data.namespace]]   # no task for the others
        for i, found in zip(searched, await asyncio.gather(*(one(commits[i]) for i in searched))):
            out[i] = found
        return out


def new_side(event: Event) -> Side:
    """The side a `memory.committed` event puts forward."""
    d = event.data
    return Side(memory_id=d.memory_id, signals=signals(d.content), agent=event.agent, source=d.source, tier=d.tier,
                distilled=bool(d.extractor))


def detected_events(commit: Event, found: list[Found], *, reaction: bool = False) -> list[Event]:
    """The `conflict.detected` events of a commit: appended with it (by its agent), or after it by a
    reaction (`reaction`: by the system)."""
    d = commit.data
    return [new_event(ConflictDetected(conflict_id(d.memory_id, f.memory_id), d.namespace, (d.memory_id, f.memory_id),
                                       f.verdict.confidence, f.verdict.kind, f.verdict.evidence[:500],
                                       (d.namespace, f.namespace)),
                      ns=commit.ns, agent="system" if reaction else commit.agent, by="reaction" if reaction else commit.by)
            for f in found]


def reported(found: list[Found]) -> list[dict[str, Any]]:
    """The commit response's `conflicts` entries: `{conflict_id, memory_id, kind, confidence}`."""
    return [{"conflict_id": f.conflict_id, "memory_id": f.memory_id, "kind": f.verdict.kind,
             "confidence": f.verdict.confidence} for f in found]
