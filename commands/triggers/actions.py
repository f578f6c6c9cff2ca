"""What each trigger does, and what its condition counts beyond the projection (the probes), built
from the services of one process (`gateway.process.wiring`). A trigger without an action here is
disabled, with the reason `disabled_reasons` gives."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from commands.triggers.service import Action, Probe
from commands.triggers.specs import Evaluation, Inputs
from commands.triggers.sweeps import Sweep


def _through(states: dict[str, Any], name: str) -> str | None:
    return ((states.get(name) or {}).get("marks") or {}).get("through") or None


def sweep_action(name: str, sweep: Sweep) -> Action:
    async def act(e: Evaluation, inputs: Inputs) -> tuple[dict[str, Any], dict[str, Any]]:
        return await sweep.run(_through(dict(inputs.state), name))
    return act


def sweep_probe(name: str, sweep: Sweep) -> Probe:
    async def probe(states: dict[str, Any]) -> dict[str, Any]:
        n, _ = await sweep.pending(_through(states, name))
        return {"writes": {name: n}}
    return probe


def distill_action(batcher: Any) -> Action:
    async def act(e: Evaluation, inputs: Inputs) -> tuple[dict[str, Any], dict[str, Any]]:
        return {"episodes": await batcher.run_once()}, {}
    return act


def distill_probe(batcher: Any) -> Probe:
    async def probe(states: dict[str, Any]) -> dict[str, Any]:
        queued = [r for r in await batcher.episodes.processing() if r["extractor"].startswith("llm:")]
        oldest = int(datetime.fromisoformat(queued[0]["started_at"]).timestamp() * 1000) if queued else 0
        return {"distill_queue": len(queued), "distill_oldest_ms": oldest, "distill_batch": batcher.batch_size,
                "distill_wait_s": batcher.max_wait_s}
    return probe


def decay_action(scheduler: Any) -> Action:
    async def act(e: Evaluation, inputs: Inputs) -> tuple[dict[str, Any], dict[str, Any]]:
        r = await scheduler.tick(prune=False)
        return {"deprecated": len(r.deprecated), "downweighted": len(r.downweighted),
                "forgotten": len(r.forgotten)}, {}
    return act


def prune_action(scheduler: Any) -> Action:
    async def act(e: Evaluation, inputs: Inputs) -> tuple[dict[str, Any], dict[str, Any]]:
        plan, _ = await scheduler.prune()
        return {"removed_nodes": len(plan.removed_nodes), "removed_edges": len(plan.removed_edges),
                "archived_edges": len(plan.archived_edges), "merged_edges": len(plan.merged_edges)}, {}
    return act


def consolidation_action(consolidation: Any) -> Action:
    async def act(e: Evaluation, inputs: Inputs) -> tuple[dict[str, Any], dict[str, Any]]:
        run = await consolidation.run(trigger="consolidation")
        return {"run_id": run["run_id"], "steps": {s["step"]: s["status"] for s in run["steps"]}}, {}
    return act


def backtrace_action(consolidation: Any) -> Action:
    async def act(e: Evaluation, inputs: Inputs) -> tuple[dict[str, Any], dict[str, Any]]:
        return await consolidation.backtrace_only(), {}
    return act


def gap_action(repairer: Any) -> Action:
    async def act(e: Evaluation, inputs: Inputs) -> tuple[dict[str, Any], dict[str, Any]]:
        result, marks = await repairer.run(_through(dict(inputs.state), "gap"))
        return dict(result), dict(marks)
    return act


def gap_probe(repairer: Any) -> Probe:
    async def probe(states: dict[str, Any]) -> dict[str, Any]:
        return {"writes": {"gap": len(await repairer.pending(_through(states, "gap")))}}
    return probe
