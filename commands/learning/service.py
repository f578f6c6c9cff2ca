"""The self-improvement commands: reward a trace (V-value propagation, seed 6.3) and record a skill's
trial (seed 6.5). Each reads what it decides on, appends one event, and answers from it; a retry with
the same `Idempotency-Key` answers the original."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import orjson

from commands.access import Actor
from commands.errors import NotFound
from commands.idempotency import ADMIN_SCOPE, key_reused
from commands.learning import values as vmath
from commands.learning.skills import Posterior
from commands.model import IdempotencyRequest
from events.catalogue import SkillTrialRecorded, TraceRewarded, new_event
from events.clock import Clock
from events.envelope import Event
from events.errors import IdempotencyConflict
from events.redis.store import Idempotency
from events.vocabulary import SHARED_NAMESPACE

CATCH_UP_S = 5.0


@dataclass(frozen=True, slots=True)
class Rewarded:
    trace_id: str
    reward: float
    steps: int
    values: list[dict[str, Any]]
    position: str
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class TrialRecorded:
    skill: dict[str, Any]
    position: str
    duplicate: bool = False


def skill_view(row: dict[str, Any]) -> dict[str, Any]:
    """A skill as the API shows it: its posterior and status derived from its evidence counts."""
    p = Posterior(int(row["successes"]), int(row["failures"]))
    return {"name": row["name"], "memory_id": row["memory_id"], "namespace": row["namespace"],
            "content": row["content"], "memory_type": "skill", "status": p.status, "eta": round(p.eta, 6),
            "alpha": p.alpha, "beta": p.beta, "successes": p.successes, "failures": p.failures,
            "trials": int(row["trials"]), "crystallized_position": row["position"]}


@dataclass
class LearningCommands:
    store: Any          # events.redis.store.EventStore
    activity: Any       # projections.activity.reader.ActivityReader: the traces' recalls
    memories: Any       # projections.memories.reader.MemoriesReader: useful counts
    learning: Any       # projections.learning.reader.LearningReader: skills
    clock: Clock
    waiter: Any         # projections.core.waiter.CheckpointWaiter: trials folded before the next is answered

    async def reward_trace(self, actor: Actor | None, trace_id: str, reward: float,
                           idem: IdempotencyRequest | None = None) -> Rewarded:
        """Propagate `reward` back along the recalls made with `trace_id` (the acting agent's own; every
        agent's for the admin key acting for nobody). NotFound when it served none."""
        idempotency = self._idempotency(actor, idem)
        if idempotency is not None and (done := await self._replayed(idempotency)) is not None:
            orig = orjson.loads(done.result)
            return Rewarded(orig["trace_id"], orig["reward"], orig["steps"], orig["values"], done.position, True)
        steps = await asyncio.to_thread(self.activity.trace_steps, trace_id)
        if actor is not None:
            steps = [s for s in steps if s[1] == actor.agent_id]
        if not steps:
            raise NotFound(f"trace {trace_id} served no recall" + (f" of agent {actor.agent_id}" if actor else ""),
                           {"trace_id": trace_id})
        served = [ids for _, _, ids in steps]
        rows = await self.memories.arows(sorted({m for ids in served for m in ids}),
                                         columns=["id", "useful_count", "status"])
        useful = {mid: int(r.get("useful_count") or 0) for mid, r in rows.items()}
        live = [[m for m in ids if m in rows] for ids in served]     # deleted since: no value to give
        valued = vmath.propagate(live, useful, reward)
        values = [{"memory_id": v.memory_id, "v": round(v.v, 6), "alpha": round(v.alpha, 6), "step": v.step}
                  for v in valued]
        payload = TraceRewarded(trace_id, float(reward), self.clock.now_ms(), len(steps), tuple(values))
        event = new_event(payload, ns=actor.main_namespace if actor else SHARED_NAMESPACE,
                          agent=actor.agent_id if actor else "admin", by=actor.by if actor else "admin")
        blob = orjson.dumps({"trace_id": trace_id, "reward": float(reward), "steps": len(steps), "values": values})
        res = await self._append([event], idempotency, blob)
        if res.duplicate:
            orig = orjson.loads(res.result)
            return Rewarded(orig["trace_id"], orig["reward"], orig["steps"], orig["values"], res.position, True)
        return Rewarded(trace_id, float(reward), len(steps), values, res.position)

    async def record_trial(self, actor: Actor | None, name: str, success: bool,
                           idem: IdempotencyRequest | None = None) -> TrialRecorded:
        """One trial of skill `name` (NotFound when there is none, or the caller may not read it)."""
        idempotency = self._idempotency(actor, idem)
        if idempotency is not None and (done := await self._replayed(idempotency)) is not None:
            return TrialRecorded(orjson.loads(done.result), done.position, True)
        # the trials before this one must be folded (the answer is the posterior after this one)
        last = await self.store.last_position()
        if last:
            await self.waiter.wait(["learning"], last, CATCH_UP_S)
        row = await asyncio.to_thread(self.learning.skill, name)
        if row is None or (actor is not None and not actor.can_read(row["namespace"])):
            raise NotFound(f"no skill named {name}", {"name": name})
        after = Posterior(int(row["successes"]), int(row["failures"])).after(success)
        view = skill_view({**row, "successes": after.successes, "failures": after.failures,
                           "trials": int(row["trials"]) + 1})
        event = new_event(SkillTrialRecorded(name, success), ns=row["namespace"],
                          agent=actor.agent_id if actor else "admin", by=actor.by if actor else "admin")
        res = await self._append([event], idempotency, orjson.dumps(view))
        if res.duplicate:
            return TrialRecorded(orjson.loads(res.result), res.position, True)
        return TrialRecorded(view, res.position)

    @staticmethod
    def _idempotency(actor: Actor | None, idem: IdempotencyRequest | None) -> Idempotency | None:
        if idem is None:
            return None
        return Idempotency(actor.agent_id if actor else ADMIN_SCOPE, idem.key, idem.fingerprint)

    async def _replayed(self, idempotency: Idempotency) -> Any:
        try:
            return await self.store.replayed(idempotency)
        except IdempotencyConflict as exc:
            raise key_reused(idempotency) from exc

    async def _append(self, events: list[Event], idempotency: Idempotency | None, blob: bytes) -> Any:
        try:
            return await self.store.append(events, idempotency=idempotency, result=blob)
        except IdempotencyConflict as exc:
            raise key_reused(idempotency) from exc
