"""Calibrated decay rates (deep consolidation, seed 3.3.1): a `consolidation.completed` carrying rates
is folded by the consolidation projection, and from then on decay, freshness and the stale rule use
them instead of appendix B's; a replay folds the same rates."""

from __future__ import annotations

from pathlib import Path

from commands.rules.time_rules import stale_unrecalled
from events.catalogue import ConsolidationCompleted, new_event
from events.hlc import iso_from_ms
from events.redis.store import EventStore
from projections.consolidation.projector import ConsolidationProjector
from projections.consolidation.reader import ConsolidationReader, DecayRates
from projections.core.runner import ProjectionRunner
from projections.memories.scores import DAY_MS, scores_of

NOW = 1_900_000_000_000


def _row(days_idle: float, decay_class: str = "proj_context") -> dict:
    at = iso_from_ms(NOW - int(days_idle * DAY_MS))
    return {"id": "m1", "namespace": "a-main", "version": 1, "decay_class": decay_class, "tier": "normal",
            "timestamp": at, "updated_at": at, "importance": 1.0, "freshness": "fresh", "recall_count": 0,
            "last_recalled_at": ""}


async def _fold(store: EventStore, directory: Path) -> ConsolidationProjector:
    projector = ConsolidationProjector(directory)
    await ProjectionRunner(store, projector, publish=False).catch_up()
    return projector


async def test_a_runs_rates_replace_appendix_b_for_decay_freshness_and_the_stale_rule(store: EventStore,
                                                                                     tmp_path: Path):
    rates = ({"decay_class": "proj_context", "base": 0.008, "rate": 0.012, "fitted": 0.0125, "samples": 900,
              "status": "clamped"},
             {"decay_class": "system_fact", "base": 0.003, "rate": 0.0045, "fitted": 0.0044, "samples": 700,
              "status": "fitted"})
    await store.append([new_event(ConsolidationCompleted("cr-1", NOW, "manual", decay_rates=rates),
                                  ns="shared", agent="system")])
    projector = await _fold(store, tmp_path / "live")
    reader = ConsolidationReader(tmp_path / "live")
    try:
        assert reader.decay_rates() == {"proj_context": 0.012, "system_fact": 0.0045}
        calibrated = DecayRates(reader).get()
        row = _row(days_idle=60)
        # appendix B: 1 - 60 x 0.008 = 0.52; calibrated: 1 - 60 x 0.012 = 0.28
        assert round(scores_of(row, NOW).decay, 6) == 0.52
        assert round(scores_of(row, NOW, rates=calibrated).decay, 6) == 0.28
        # 75 days idle: fresh under appendix B (0.4), at the floor (stale) with the faster rate
        assert scores_of(_row(75), NOW).freshness == "fresh"
        assert scores_of(_row(75), NOW, rates=calibrated).freshness == "stale"
        # the 180-day stale rule: a system fact idle 210 days is at 0.37 under appendix B, at the floor calibrated
        fact = _row(210, "system_fact")
        assert stale_unrecalled([fact], NOW) == []
        assert [d.memory_id for d in stale_unrecalled([fact], NOW, calibrated)] == ["m1"]
        # a rebuild folds the same rates
        rebuilt = await _fold(store, tmp_path / "rebuilt")
        assert await rebuilt.digest() == await projector.digest()
        await rebuilt.close()
    finally:
        reader.close()
        await projector.close()
