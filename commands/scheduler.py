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
nothing new the second time. `zhiyi up` ticks every `interval_s`; `POST /api/v1/admin/tick` and
`zhiyi tick` run one now. The clock is injected (`events.clock`), so tests move time by days.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import structlog

from commands.decide import Decision, decide_deadline_deprecations, decide_downweights, decide_forget
from commands.handlers import CommandService
from commands.rules.forgetting import DEFAULT_CAPACITY, ForgetCandidate, choose
from commands.rules.time_rules import Due, quality_deadline, stale_unrecalled
from events.catalogue import GraphPruned, new_event
from events.clock import Clock
from events.redis.client import RETRY_BACKOFF_MAX_S, TRANSIENT_ERRORS
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
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)

    async def _rows(self, namespace: str | None = None) -> list[dict[str, Any]]:
        last = await self.store.last_position()
        if last and not await self.waiter.wait(READS, last, self.wait_s):
            raise SchedulerLag(last)
        return await asyncio.to_thread(live_rows, self.reader, self.activity, namespace)

    async def _settle(self, position: str) -> None:
        if position and not await self.waiter.wait(READS, position, self.wait_s):
            raise SchedulerLag(position)

    async def tick(self, *, dry_run: bool = False, capacity: int | None = None) -> TickReport:
        """One run of every time-driven rule at the clock's now (serialised: one tick at a time)."""
        capacity = self.capacity if capacity is None else capacity
        async with self._lock:
            now = self.clock.now_ms()
            if dry_run:
                rows = await self._rows()
                deadline, stale = quality_deadline(rows, now), stale_unrecalled(rows, now)
                doomed = {d.memory_id for d in deadline}
                for r in rows:  # what the forget run would see after the deprecations
                    if r["id"] in doomed:
                        r["status"] = "deprecated"
                return TickReport(now, deadline, stale, choose(rows, capacity), await self._prune_plan(now), "", True)
            deprecated, p1 = await self.commands.planned(
                lambda: self._select(quality_deadline, now), decide_deadline_deprecations, "quality_deadline")
            downweighted, p2 = await self.commands.planned(
                lambda: self._select(stale_unrecalled, now),
                lambda due: decide_downweights(due, STALE_IMPORTANCE_FACTOR), "stale_rule")
            await self._settle(p2 or p1)
            forgotten, p3 = await self.commands.planned(
                lambda: self._forget_plan(capacity), lambda c: _forget_decision(c), "forget")
            await self._settle(p3 or p2 or p1)
            pruned, p4 = await self._prune(now)
            report = TickReport(now, deprecated, downweighted, forgotten, pruned, p4 or p3 or p2 or p1)
            log.info("scheduler.ticked", now_ms=now, deprecated=len(deprecated), downweighted=len(downweighted),
                     forgotten=len(forgotten), pruned_nodes=len(pruned.removed_nodes),
                     pruned_edges=len(pruned.removed_edges), position=report.position)
            return report

    async def _prune_plan(self, now: int) -> PrunePlan:
        if self.graph is None:
            return PrunePlan()
        last = await self.store.last_position()
        if last and not await self.waiter.wait(["graph"], last, self.wait_s):
            raise SchedulerLag(last, ["graph"])
        return await asyncio.to_thread(self.graph.prune_plan, now)

    async def _prune(self, now: int) -> tuple[PrunePlan, str]:
        plan = await self._prune_plan(now)
        if not plan:
            return plan, ""
        event = new_event(GraphPruned(plan.removed_nodes, plan.removed_edges, plan.archived_edges, plan.merged_edges),
                          ns=SHARED_NAMESPACE, agent="system", by="scheduler")
        res = await self.store.append([event])
        return plan, res.position

    async def _select(self, rule: Callable[[list[dict[str, Any]], int], list[Due]], now: int) -> list[Due]:
        return rule(await self._rows(), now)

    async def _forget_plan(self, capacity: int, namespace: str | None = None) -> list[ForgetCandidate]:
        return choose(await self._rows(namespace), capacity)

    async def forget(self, *, capacity: int | None = None, namespace: str | None = None,
                     dry_run: bool = False, by: str = "admin") -> tuple[list[ForgetCandidate], str]:
        """A forget run alone (POST /api/v1/admin/forget)."""
        capacity = self.capacity if capacity is None else capacity
        async with self._lock:
            if dry_run:
                return await self._forget_plan(capacity, namespace), ""
            return await self.commands.planned(lambda: self._forget_plan(capacity, namespace),
                                               lambda c: _forget_decision(c, by=by), "forget")

    async def run(self, stop: asyncio.Event, interval_s: float) -> None:
        """Tick every `interval_s` until `stop`. A tick failed by a transient Redis error is tried again
        after a back-off (up to 2 s), not an interval later; other errors are logged (the next tick
        tries again)."""
        wait, delay = interval_s, 0.1
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), wait)
                return
            except asyncio.TimeoutError:
                pass
            try:
                await self.tick()
            except TRANSIENT_ERRORS as exc:
                log.warning("scheduler.redis_error", error=str(exc), retry_in_s=delay)
                wait, delay = delay, min(delay * 2, RETRY_BACKOFF_MAX_S)
                continue
            except Exception:  # noqa: BLE001 - a failed tick must not stop the schedule
                log.exception("scheduler.tick_failed")
            wait, delay = interval_s, 0.1


def _forget_decision(candidates: list[ForgetCandidate], *, by: str = "scheduler") -> Decision:
    return decide_forget(candidates, by=by)
