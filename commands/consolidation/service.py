"""Deep consolidation (seed 3.5 flow 5): one run of its steps over the whole store, recorded as
events so replay stays deterministic.

Steps, in order (each failure is caught: the step is `failed` and skipped, the next run tries it
again; its third failure in a row disables it — `consolidation.step_disabled` and a notice):

1. `clusters` — HDBSCAN topic clusters of the live memories' vectors (`commands.consolidation.clusters`);
2. `prune` — graph prune (seed 2.5.5) and PageRank: one `graph.pruned`, even an empty one, so the
   graph projector recomputes the ranks;
3. `calibration` — the decay rate of each class fitted to the recall/feedback history of the last
   :data:`WINDOW_DAYS` days (`commands.consolidation.calibration`), within ±50% of appendix B;
4. `backtrace` — the distillation quality backtrace (`commands.consolidation.backtrace`; `not_run`
   without an LLM);
5. `patterns` — pattern mining: >= 3 memories of one category and namespace in one cluster -> at most
   one L2 pattern memory per cluster, `derived_from_memories` its members (`skipped` when clustering
   did not run).

Everything is appended at once: the pattern memories, the `graph.pruned`, the
`consolidation.completed` report (every step's status and figures, the clusters, the rates, the
patterns, and the regressions against the previous run) and any step disabled.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import orjson
import structlog

from commands.consolidation import backtrace as bt
from commands.consolidation.calibration import MemorySample, Use, calibrate
from commands.consolidation.clusters import topic_clusters
from commands.consolidation.patterns import PatternMember, mine_patterns
from events.catalogue import (
    ConsolidationCompleted, ConsolidationStepDisabled, ConsolidationStepEnabled, MemoryCommitted, MemoryFeedback,
    NoticeRaised, RecallServed, new_event,
)
from events.clock import Clock
from events.envelope import Event
from events.redis.client import TRANSIENT_ERRORS
from events.vocabulary import DECAY_CLASS_BY_CATEGORY, SHARED_NAMESPACE
from projections.memories.scores import ms_of
from projections.consolidation.reader import is_mined
from projections.queries.consolidation_rows import live_with_vectors

log = structlog.get_logger(__name__)

STEPS = ("clusters", "prune", "calibration", "backtrace", "patterns")
FAILURES_TO_DISABLE = 3
WINDOW_DAYS = 180
USE_SCAN = 200_000          # log entries read back for the recall history, at most
MIN_CALIBRATION_USES = 200  # fewer uses leave a class at its base (the fit's error is ~40% at 50)
CLUSTER_MEMBERS_KEPT = 50
PATTERN_EXTRACTOR = "consolidation:patterns"
READS = ("memories", "activity", "graph", "consolidation", "episodes")
DAY_MS = 86_400_000


class ConsolidationLag(RuntimeError):
    """The projections did not reach the end of the log in time: nothing ran."""


class UnknownStep(LookupError):
    def __init__(self, step: str) -> None:
        super().__init__(f"no consolidation step named {step!r}; known: {', '.join(STEPS)}")


@dataclass
class StepOutcome:
    status: str
    detail: dict[str, Any] = field(default_factory=dict)
    error: str = ""


@dataclass
class Context:
    """What one run's steps hand each other, and the events they decided."""

    now_ms: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    clusters: list[dict[str, Any]] = field(default_factory=list)
    rates: list[dict[str, Any]] = field(default_factory=list)
    patterns: list[dict[str, Any]] = field(default_factory=list)
    backtrace: dict[str, Any] | None = None
    events: list[Event] = field(default_factory=list)


@dataclass
class ConsolidationService:
    store: Any                      # events.redis.store.EventStore
    memories: Any                   # projections.memories.reader.MemoriesReader
    reader: Any                     # projections.consolidation.reader.ConsolidationReader
    episodes: Any                   # projections.episodes.reader.EpisodesReader
    scheduler: Any                  # commands.scheduler.Scheduler (the graph prune)
    waiter: Any                     # projections.core.waiter.CheckpointWaiter
    clock: Clock
    embedder: Any = None            # .embed(texts): the backtrace's cosine
    llm: Any = None                 # commands.llm.ChatClient: the backtrace (None: not run)
    wait_s: float = 60.0
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)

    async def _settle(self) -> None:
        last = await self.store.last_position()
        if last and not await self.waiter.wait(list(READS), last, self.wait_s):
            raise ConsolidationLag(f"projections {list(READS)} did not reach {last}")

    async def run(self, trigger: str = "manual") -> dict[str, Any]:
        """One consolidation run now; the report, with the position of its events."""
        async with self._lock:
            await self._settle()
            started = time.perf_counter()
            ctx = Context(self.clock.now_ms())
            states = await asyncio.to_thread(self.reader.steps)
            ctx.rows, vectors = await asyncio.to_thread(live_with_vectors, self.memories)
            steps: dict[str, Callable[[Context], Awaitable[StepOutcome]]] = {
                "clusters": lambda c: self._clusters(c, vectors), "prune": self._prune,
                "calibration": self._calibration, "backtrace": self._backtrace, "patterns": self._patterns}
            outcomes: dict[str, StepOutcome] = {}
            for name in STEPS:
                outcomes[name] = await self._step(name, steps[name], ctx, states.get(name) or {}, outcomes)
            previous = await asyncio.to_thread(self.reader.runs, 1)
            report = _report(ctx, outcomes, previous[0]["report"] if previous else None,
                             round((time.perf_counter() - started) * 1000))
            run_id = "cr-" + uuid.uuid4().hex[:16]
            entries = [{"step": n, "status": o.status, "detail": o.detail, "error": o.error}
                       for n, o in outcomes.items()]
            events = ctx.events + [new_event(ConsolidationCompleted(
                run_id, ctx.now_ms, trigger, tuple(entries), tuple(ctx.clusters), tuple(ctx.rates),
                tuple(ctx.patterns), report), ns=SHARED_NAMESPACE, agent="system", by="scheduler")]
            events += self._disabled(outcomes, states)
            res = await self.store.append(events)
            log.info("consolidation.completed", run_id=run_id, trigger=trigger, position=res.position,
                     **{n: o.status for n, o in outcomes.items()})
            return {"run_id": run_id, "trigger": trigger, "steps": entries, "report": report,
                    "clusters": len(ctx.clusters), "patterns": ctx.patterns, "decay_rates": ctx.rates,
                    "position": res.position}

    async def _step(self, name: str, fn: Callable[[Context], Awaitable[StepOutcome]], ctx: Context,
                    state: dict[str, Any], done: dict[str, StepOutcome]) -> StepOutcome:
        if state.get("disabled"):
            return StepOutcome("disabled", {"reason": f"disabled after {state.get('failures')} failures in a row; "
                                            f"last: {state.get('last_error', '')}"})
        if name == "patterns" and done["clusters"].status != "ok":
            return StepOutcome("skipped", {"reason": "no clusters this run"})
        began = time.perf_counter()
        try:
            outcome = await fn(ctx)
        except TRANSIENT_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001 - a failing step is skipped and counted (flow 5)
            log.warning("consolidation.step_failed", step=name, error=str(exc)[:300])
            return StepOutcome("failed", {}, f"{type(exc).__name__}: {exc}"[:500])
        outcome.detail["ms"] = round((time.perf_counter() - began) * 1000)
        return outcome

    def _disabled(self, outcomes: dict[str, StepOutcome], states: dict[str, Any]) -> list[Event]:
        out = []
        for name, o in outcomes.items():
            failures = int((states.get(name) or {}).get("failures") or 0) + 1
            if o.status == "failed" and failures >= FAILURES_TO_DISABLE:
                out += [new_event(ConsolidationStepDisabled(name, failures, o.error), ns=SHARED_NAMESPACE,
                                  agent="system", by="scheduler"),
                        new_event(NoticeRaised("step_disabled", name,
                                               f"consolidation step {name} disabled after {failures} failures in a "
                                               f"row; last: {o.error}"), ns=SHARED_NAMESPACE, agent="system",
                                  by="scheduler")]
                log.warning("consolidation.step_disabled", step=name, failures=failures, error=o.error)
        return out

    async def backtrace_only(self) -> dict[str, Any]:
        """The backtrace step alone, now (the `backtrace` trigger): its figures (raises when it fails)."""
        async with self._lock:
            await self._settle()
            ctx = Context(self.clock.now_ms())
            ctx.rows, _ = await asyncio.to_thread(live_with_vectors, self.memories)
            outcome = await self._backtrace(ctx)
            return {"status": outcome.status, **outcome.detail}

    async def enable(self, step: str, by: str = "admin") -> dict[str, Any]:
        """Enable a disabled step again (`POST /api/v1/admin/consolidation/steps/{step}/enable`)."""
        if step not in STEPS:
            raise UnknownStep(step)
        async with self._lock:
            await self._settle()
            state = (await asyncio.to_thread(self.reader.steps)).get(step) or {}
            if not state.get("disabled"):
                return {"step": step, "disabled": False, "changed": False, "position": ""}
            res = await self.store.append([new_event(ConsolidationStepEnabled(step), ns=SHARED_NAMESPACE,
                                                     agent="system", by=by)])
            return {"step": step, "disabled": False, "changed": True, "position": res.position}

    # ------------------------------------------------------------------ the steps

    async def _clusters(self, ctx: Context, vectors: Any) -> StepOutcome:
        # the topics of what was remembered: mined patterns (summaries of clusters) would pull the
        # clusters toward themselves, and the next run would mine the moved clusters again
        keep = [i for i, r in enumerate(ctx.rows) if not is_mined(r.get("extractor") or "")]
        ids = [ctx.rows[i]["id"] for i in keep]
        found = await asyncio.to_thread(topic_clusters, ids, vectors[keep]) if ids else None
        if found is None:
            return StepOutcome("ok", {"memories": 0, "clusters": 0, "noise": 0})
        ctx.clusters = [{"cluster_id": c.cluster_id, "size": c.size, "members": list(c.member_ids),
                         "categories": _categories(c.member_ids, ctx.rows)} for c in found.clusters]
        return StepOutcome("ok", {"memories": len(ids), "clusters": len(found.clusters), "noise": found.noise,
                                  "dims": found.dims})

    async def _prune(self, ctx: Context) -> StepOutcome:
        plan, event = await self.scheduler.prune_decision(ctx.now_ms, always=True)
        ctx.events.append(event)
        return StepOutcome("ok", {"removed_nodes": len(plan.removed_nodes), "removed_edges": len(plan.removed_edges),
                                  "archived_edges": len(plan.archived_edges), "merged_edges": len(plan.merged_edges),
                                  "pagerank": "recomputed"})

    async def _calibration(self, ctx: Context) -> StepOutcome:
        start = ctx.now_ms - WINDOW_DAYS * DAY_MS
        samples = [MemorySample(r["id"], r.get("decay_class") or DECAY_CLASS_BY_CATEGORY.get(r.get("category") or "fact", "system_fact"),
                                ms_of(r.get("updated_at") or r.get("timestamp") or "")) for r in ctx.rows]
        uses = await self._uses(start)
        rates = await asyncio.to_thread(lambda: calibrate(samples, uses, window_start_ms=start, now_ms=ctx.now_ms,
                                                          min_samples=MIN_CALIBRATION_USES))
        ctx.rates = [{"decay_class": r.decay_class, "base": r.base, "rate": round(r.rate, 6),
                      "fitted": None if r.fitted is None else round(r.fitted, 6), "samples": r.samples,
                      "status": r.status, "note": r.note} for r in rates]
        return StepOutcome("ok", {"uses": len(uses), "window_days": WINDOW_DAYS,
                                  "fitted": sum(r.status != "kept" for r in rates)})

    async def _uses(self, start_ms: int) -> list[Use]:
        """Recall hits and useful votes of the window, newest first, from the log."""
        uses: list[Use] = []
        end, read = None, 0
        while read < USE_SCAN:
            batch = await self.store.read_reverse(end, count=2000)
            if end is not None:
                batch = [e for e in batch if e.position != end]
            if not batch:
                break
            read += len(batch)
            for e in batch:
                at = e.wall_ms
                if isinstance(e.data, RecallServed):
                    uses += [Use(mid, at) for mid in e.data.result_ids]
                elif isinstance(e.data, MemoryFeedback) and e.data.verdict == "useful":
                    uses.append(Use(e.data.memory_id, at))
            end = batch[-1].position
            if batch[-1].wall_ms < start_ms:
                break
        return [u for u in uses if u.at_ms >= start_ms]

    async def _backtrace(self, ctx: Context) -> StepOutcome:
        if self.llm is None:
            return StepOutcome("not_run", {"reason": "needs an LLM (LLM_ENDPOINT)"})
        distilled = [r for r in ctx.rows if r.get("extractor") and not r["extractor"].startswith("consolidation")
                     and r.get("derived_from")]
        sample = []
        for stratum, row in bt.stratified(distilled):
            episode = await self.episodes.get(row["namespace"], row["derived_from"])
            if episode is not None:
                sample.append(bt.Sampled(row["id"], stratum, row["content"],
                                         bt.episode_text(orjson.loads(episode["chunks"]))))
        ctx.backtrace = await bt.backtrace(self.llm, self.embedder, sample)
        return StepOutcome("ok", dict(ctx.backtrace))

    async def _patterns(self, ctx: Context) -> StepOutcome:
        members = {r["id"]: PatternMember(r["id"], r["namespace"], r.get("category") or "fact", r["content"],
                                          r.get("kind") or "L1") for r in ctx.rows}
        existing = await asyncio.to_thread(self.reader.pattern_members)
        plans = mine_patterns([(c["cluster_id"], c["members"]) for c in ctx.clusters], members, existing=existing)
        known = await self.store.memory_indexes([p.memory_id for p in plans]) if plans else {}
        for p in plans:
            if p.memory_id in known:
                continue
            ctx.events.append(new_event(MemoryCommitted(
                memory_id=p.memory_id, content=p.content, namespace=p.namespace, category="pattern",
                decay_class=DECAY_CLASS_BY_CATEGORY["pattern"], kind="L2", source="pattern_mining",
                extractor=PATTERN_EXTRACTOR, derived_from_memories=p.member_ids),
                ns=p.namespace, agent="system", by="scheduler"))
            ctx.patterns.append({"memory_id": p.memory_id, "cluster_id": p.cluster_id, "category": p.category,
                                 "namespace": p.namespace, "members": list(p.member_ids)})
        for c in ctx.clusters:   # the event keeps the members closest to each centroid
            c["members"] = c["members"][:CLUSTER_MEMBERS_KEPT]
        return StepOutcome("ok", {"patterns": len(ctx.patterns)})


def _categories(member_ids: tuple[str, ...], rows: list[dict[str, Any]]) -> dict[str, int]:
    wanted = set(member_ids)
    out: dict[str, int] = {}
    for r in rows:
        if r["id"] in wanted:
            out[r.get("category") or "fact"] = out.get(r.get("category") or "fact", 0) + 1
    return dict(sorted(out.items()))


def _report(ctx: Context, outcomes: dict[str, StepOutcome], previous: dict[str, Any] | None,
            duration_ms: int) -> dict[str, Any]:
    """The run's figures (seed flow 5 step 5), and what got worse since the previous run."""
    clusters = outcomes["clusters"].detail
    memories = len(ctx.rows)
    report: dict[str, Any] = {
        "memories": memories,
        "clusters_found": len(ctx.clusters),
        "noise_fraction": round(clusters.get("noise", 0) / clusters["memories"], 4) if clusters.get("memories") else 0.0,
        "pruned": {k: v for k, v in outcomes["prune"].detail.items() if k.endswith(("nodes", "edges"))},
        "rates_calibrated": sum(1 for r in ctx.rates if r["status"] != "kept"),
        "patterns_written": len(ctx.patterns),
        "backtrace_mean_cosine": (ctx.backtrace or {}).get("mean_cosine"),
        "failed_steps": [n for n, o in outcomes.items() if o.status == "failed"],
        "duration_ms": duration_ms,
    }
    regressions = []
    if previous:
        if report["noise_fraction"] - float(previous.get("noise_fraction") or 0) > 0.1:
            regressions.append("noise_fraction rose by more than 0.1")
        before, now = previous.get("backtrace_mean_cosine"), report["backtrace_mean_cosine"]
        if before is not None and now is not None and before - now > 0.05:
            regressions.append("backtrace_mean_cosine fell by more than 0.05")
    report["regressions"] = regressions
    return report
