"""The scheduler: time-driven decisions, appended as events (projectors never read the clock).

One `tick` at the clock's `now`:

1. waits until the memories and activity projections have reached the end of the log;
2. quality deadline (seed 3.2.1): memories still low 7 days after their quality notice are
   deprecated (`memory.deprecated`, agent `system`);
3. stale rule (seed 3.3.1 rule 4): stale memories not recalled for 180 days get importance
   factor 0.1 (`memory.downweighted`);
4. a forget run (seed 3.3.1): quality_low, deprecated (including step 2's), then LRU above the
   per-namespace capacity, each into the tombstones (`memory.forgotten`);
5. graph maintenance (seed 2.5.5): isolated nodes, stale low-weight edges, redundant edges and
   resolved conflicts, one `graph.pruned` event (the graph projector then recomputes PageRank).

Every selection is a pure function of the projection and `now`, so a tick run twice decides
nothing new the second time. `POST /api/v1/admin/tick` and `zhiyi tick` run one now; in a running
server the triggers (`commands.triggers`) run its parts on their schedule: `decay` (steps 2-4, every
6 h) and `prune` (step 5, every 24 h). The clock is injected (`events.clock`), so tests move time by days.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import structlog

from commands.decide import Decision, decide_deadline_deprecations, decide_downweights, decide_forget
from commands.handlers import CommandService
from commands.rules.ephemeral import DEFAULT_TTL_S, expired, of_session
from commands.rules.forgetting import DEFAULT_CAPACITY, ForgetCandidate, choose, over_capacity
from commands.rules.time_rules import Due, quality_deadline, stale_unrecalled
from events.catalogue import GraphPruned, new_event
from events.clock import Clock
from events.envelope import Event
from events.vocabulary import SHARED_NAMESPACE
from projections.graph.reader import PrunePlan
from projections.memories.scores import STALE_IMPORTANCE_FACTOR
from projections.queries.live_memories import live_rows

log = structlog.get_logger(__name__)

READS = ["memories", "activity"]


class SchedulerLag(RuntimeError):
    """The projections did not reach the end of the log in time: nothing was decided."""

    def __init__(self, position: str, projections: list[str] = READS) -> None:
        super().__init__(f"projections {projections} did not reach {position}")
        self.position = position
        self.projections = list(projections)


@dataclass(frozen=True, slots=True)
class TickReport:
    now_ms: int
    deprecated: list[Due] = field(default_factory=list)
    downweighted: list[Due] = field(default_factory=list)
    forgotten: list[ForgetCandidate] = field(default_factory=list)
    pruned: PrunePlan = field(default_factory=PrunePlan)
    position: str = ""
    dry_run: bool = False


@dataclass
class Scheduler:
    reads: ClassVar[tuple[str, ...]] = tuple(READS)   # what every rule decides on (the prune: the graph too)

    store: Any                  # events.redis.store.EventStore
    commands: CommandService
    reader: Any                 # projections.memories.reader.MemoriesReader
    activity: Any               # projections.activity.reader.ActivityReader
    waiter: Any                 # projections.core.waiter.CheckpointWaiter
    clock: Clock
    graph: Any = None           # projections.graph.reader.GraphReader (None: no graph maintenance)
    capacity: int = DEFAULT_CAPACITY
    wait_s: float = 30.0
    rates: Any = None           # .get() -> the calibrated decay rates (projections.consolidation.reader.DecayRates)
    ephemeral_ttl_s: float = DEFAULT_TTL_S   # ephemeral memories older than this are forgotten (0: never)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)

    async def _rows(self, namespace: str | None = None) -> list[dict[str, Any]]:
        last = await self.store.last_position()
        if last and not await self.waiter.wait(READS, last, self.wait_s):
            raise SchedulerLag(last)
        return await asyncio.to_thread(live_rows, self.reader, self.activity, namespace)

    async def _settle(self, position: str) -> None:
        if position and not await self.waiter.wait(READS, position, self.wait_s):
            raise SchedulerLag(position)

    async def tick(self, *, dry_run: bool = False, capacity: int | None = None, prune: bool = True) -> TickReport:
        """One run of every time-driven rule at the clock's now (serialised: one tick at a time);
        `prune=False`: without the graph prune (the `decay` trigger; `prune` has its own)."""
        capacity = self.capacity if capacity is None else capacity
        async with self._lock:
            now = self.clock.now_ms()
            if dry_run:
                rows = await self._rows()
                deadline, stale = quality_deadline(rows, now), stale_unrecalled(rows, now, self._rates())
                doomed = {d.memory_id for d in deadline}
                for r in rows:  # what the forget run would see after the deprecations
                    if r["id"] in doomed:
                        r["status"] = "deprecated"
                forget = choose(rows, capacity, await self._degrees(rows, capacity))
                chosen = {c.memory_id for c in forget}
                forget += [c for c in expired(rows, now, self.ephemeral_ttl_s) if c.memory_id not in chosen]
                return TickReport(now, deadline, stale, forget, await self._prune_plan(now), "", True)
            deprecated, p1 = await self.commands.planned(
                lambda: self._select(quality_deadline, now), decide_deadline_deprecations, "quality_deadline")
            downweighted, p2 = await self.commands.planned(
                lambda: self._select(lambda rows, at: stale_unrecalled(rows, at, self._rates()), now),
                lambda due: decide_downweights(due, STALE_IMPORTANCE_FACTOR), "stale_rule")
            await self._settle(p2 or p1)
            forgotten, p3 = await self.commands.planned(
                lambda: self._forget_plan(capacity), lambda c: _forget_decision(c), "forget")
            await self._settle(p3 or p2 or p1)
            expired_, p5 = await self.commands.planned(
                lambda: self._expired_plan(now), lambda c: _forget_decision(c), "ephemeral_expiry")
            await self._settle(p5 or p3 or p2 or p1)
            pruned, p4 = await self._prune(now) if prune else (PrunePlan(), "")
            report = TickReport(now, deprecated, downweighted, forgotten + expired_, pruned,
                                p4 or p5 or p3 or p2 or p1)
            log.info("scheduler.ticked", now_ms=now, deprecated=len(deprecated), downweighted=len(downweighted),
                     forgotten=len(forgotten), pruned_nodes=len(pruned.removed_nodes),
                     pruned_edges=len(pruned.removed_edges), position=report.position)
            return report

    def _rates(self) -> Any:
        return self.rates.get() if self.rates is not None else None

    async def _prune_plan(self, now: int) -> PrunePlan:
        if self.graph is None:
            return PrunePlan()
        last = await self.store.last_position()
        if last and not await self.waiter.wait(["graph"], last, self.wait_s):
            raise SchedulerLag(last, ["graph"])
        return await asyncio.to_thread(self.graph.prune_plan, now)

    async def prune_decision(self, now: int, *, always: bool = False) -> tuple[PrunePlan, Event | None]:
        """The graph prune at `now` as its `graph.pruned` event (None for an empty plan unless `always`:
        deep consolidation appends it anyway, so the PageRank is recomputed)."""
        plan = await self._prune_plan(now)
        if not plan and not always:
            return plan, None
        return plan, new_event(GraphPruned(plan.removed_nodes, plan.removed_edges, plan.archived_edges,
                                           plan.merged_edges), ns=SHARED_NAMESPACE, agent="system", by="scheduler")

    async def _prune(self, now: int) -> tuple[PrunePlan, str]:
        plan, event = await self.prune_decision(now)
        if event is None:
            return plan, ""
        res = await self.store.append([event])
        return plan, res.position

    async def prune(self) -> tuple[PrunePlan, str]:
        """The graph prune alone, now (the `prune` trigger)."""
        async with self._lock:
            return await self._prune(self.clock.now_ms())

    async def _select(self, rule: Callable[[list[dict[str, Any]], int], list[Due]], now: int) -> list[Due]:
        return rule(await self._rows(), now)

    async def _forget_plan(self, capacity: int, namespace: str | None = None) -> list[ForgetCandidate]:
        rows = await self._rows(namespace)
        return choose(rows, capacity, await self._degrees(rows, capacity))

    async def _degrees(self, rows: list[dict[str, Any]], capacity: int) -> dict[str, int]:
        """Graph degrees of the LRU pass's candidates (plan E4.3), once the graph has the log's end."""
        ids = over_capacity(rows, capacity)
        if not ids or self.graph is None:
            return {}
        last = await self.store.last_position()
        if last and not await self.waiter.wait(["graph"], last, self.wait_s):
            raise SchedulerLag(last, ["graph"])
        return await asyncio.to_thread(self.graph.degrees, ids)

    async def _expired_plan(self, now: int) -> list[ForgetCandidate]:
        return expired(await self._rows(), now, self.ephemeral_ttl_s)

    async def close_session(self, namespace: str, session_id: str, *, by: str = "") -> tuple[list[ForgetCandidate], str]:
        """Forget the live memories committed into `namespace` under `session_id` (reason
        `session_closed`); ([], "") when there are none (already closed, or an unknown session)."""
        members = await self.store.session_members(namespace, session_id)
        if not members:
            return [], ""
        async with self._lock:
            return await self.commands.planned(lambda: self._session_plan(namespace, members),
                                               lambda c: _forget_decision(c, by=by or "session"), "session_close")

    async def _session_plan(self, namespace: str, members: list[str]) -> list[ForgetCandidate]:
        return of_session(await self._rows(namespace), members)

    async def forget(self, *, capacity: int | None = None, namespace: str | None = None,
                     dry_run: bool = False, by: str = "admin") -> tuple[list[ForgetCandidate], str]:
        """A forget run alone (POST /api/v1/admin/forget)."""
        capacity = self.capacity if capacity is None else capacity
        async with self._lock:
            if dry_run:
                return await self._forget_plan(capacity, namespace), ""
            return await self.commands.planned(lambda: self._forget_plan(capacity, namespace),
                                               lambda c: _forget_decision(c, by=by), "forget")


def _forget_decision(candidates: list[ForgetCandidate], *, by: str = "scheduler") -> Decision:
    return decide_forget(candidates, by=by)
