"""Evaluation history and golden sets, read straight from the log (`eval.*` events are rare).

Both scans read the stream newest first through `events.browse.list_events`, so the cost is
proportional to how far back the wanted event lies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from events import browse
from events.catalogue import EvalCompleted, GoldenSetCreated
from events.envelope import Event
from events.hlc import iso_from_ms
from events.redis.store import EventStore
from projections.queries.evaluation.metrics import EvalQuery

GOLDEN = "eval.golden_set_created"
COMPLETED = "eval.completed"
REGRESSION = 0.05  # recall@5 dropping by more than this flags a regression (seed 6.1: "退化则告警")
TRACKED = ("recall_at_5", "precision_at_5", "mean_reciprocal_rank")


@dataclass(frozen=True, slots=True)
class GoldenSet:
    golden_set_id: str
    queries: list[EvalQuery]
    position: str
    generator: str
    seed: int
    namespace: str

    def to_json(self) -> dict[str, Any]:
        return {"golden_set_id": self.golden_set_id, "queries": [q.to_json() for q in self.queries],
                "position": self.position, "generator": self.generator, "seed": self.seed,
                "namespace": self.namespace or None}


def golden_from_event(event: Event) -> GoldenSet:
    d: GoldenSetCreated = event.data
    return GoldenSet(d.golden_set_id, [EvalQuery.from_json(q) for q in d.queries], event.position,
                     d.generator, d.seed, d.namespace)


async def find_golden_set(store: EventStore, golden_set_id: str | None = None) -> GoldenSet | None:
    """The golden set with that id (the newest one when several share it), else the newest one."""
    flt = browse.EventFilter(types=frozenset({GOLDEN}))
    limit = 1 if golden_set_id is None else 0  # 0: scan until found (all, newest first)
    for ev in await browse.list_events(store, flt, limit=limit, newest_first=True):
        if isinstance(ev.data, GoldenSetCreated) and (golden_set_id is None or ev.data.golden_set_id == golden_set_id):
            return golden_from_event(ev)
    return None


def _run(ev: Event) -> dict[str, Any]:
    d: EvalCompleted = ev.data
    return {"position": ev.position, "timestamp": iso_from_ms(browse.event_ms(ev)), "agent": ev.agent,
            "golden_set_id": d.golden_set_id or None, "top_k": d.top_k, "queries": d.queries,
            "namespace": d.namespace or None, "metrics": d.metrics}


def trend(runs: list[dict[str, Any]]) -> tuple[dict[str, float] | None, bool]:
    """(newest - previous for the tracked metrics, regressed) over runs given newest first."""
    if len(runs) < 2:
        return None, False
    new, old = runs[0]["metrics"], runs[1]["metrics"]
    delta = {m: round(float(new.get(m, 0.0)) - float(old.get(m, 0.0)), 6) for m in TRACKED}
    return delta, delta["recall_at_5"] < -REGRESSION


async def history(store: EventStore, limit: int = 20, *, agent: str | None = None) -> dict[str, Any]:
    """The newest `limit` evaluation runs (only `agent`'s when given), the delta and the regression flag."""
    flt = browse.EventFilter(types=frozenset({COMPLETED}), agents=frozenset({agent}) if agent else frozenset())
    events = await browse.list_events(store, flt, limit=limit, newest_first=True)
    runs = [_run(ev) for ev in events if isinstance(ev.data, EvalCompleted)]
    delta, regressed = trend(runs)
    return {"runs": runs, "delta": delta, "regressed": regressed}
