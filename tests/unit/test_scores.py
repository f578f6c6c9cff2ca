"""Derived scores (seed 2.2 / 3.3.1) at an injected now."""

from __future__ import annotations

import math

import pytest

from events.hlc import iso_from_ms
from projections.memories import scores
from projections.memories.scores import DAY_MS, scores_of

NOW = 1_800_000_000_000


def _row(**kw):
    base = {"id": "m", "tier": "normal", "decay_class": "system_fact", "importance": 1.0, "quality_score": 0.5,
            "freshness": "fresh", "volatile_flag": False, "updated_at": iso_from_ms(NOW), "source": "config_parse"}
    base.update(kw)
    return base


def _days_ago(days: float) -> str:
    return iso_from_ms(NOW - int(days * DAY_MS))


def test_importance_halves_every_90_days_and_grows_with_recalls():
    assert scores.importance(1.0, 0, 0) == pytest.approx(1.0)
    assert scores.importance(1.0, 90, 0) == pytest.approx(0.5, abs=0.01)
    assert scores.importance(1.0, 0, 10) == pytest.approx(1 + math.log(11))
    assert scores.importance(0.5, 0, 0) == pytest.approx(0.5)          # the quality drop
    assert scores.importance(1.0, 900, 0, core=True) == pytest.approx(1.0)  # core does not age


@pytest.mark.parametrize("decay_class,rate", [("system_fact", 0.003), ("user_pref", 0.005), ("proj_context", 0.008),
                                              ("tool_usage", 0.010), ("code_snippet", 0.012)])
def test_linear_decay_by_class_with_floor_volatile_and_core(decay_class, rate):
    assert scores.decay(decay_class, 10) == pytest.approx(1 - 10 * rate)
    assert scores.decay(decay_class, 10, volatile=True) == pytest.approx(1 - 20 * rate)
    assert scores.decay(decay_class, 10_000) == scores.DECAY_FLOOR
    assert scores.decay(decay_class, 10_000, core=True) == 1.0


def test_freshness_is_stale_when_marked_or_decayed_to_the_floor():
    fresh = scores_of(_row(), NOW)
    assert fresh.freshness == "fresh" and fresh.decay == 1.0
    decayed = scores_of(_row(decay_class="code_snippet", updated_at=_days_ago(80)), NOW)
    assert decayed.decay == scores.DECAY_FLOOR and decayed.freshness == "stale"
    assert scores_of(_row(freshness="stale"), NOW).freshness == "stale"
    assert scores_of(_row(freshness="verified"), NOW).freshness == "verified"
    # a memory in use does not decay: idle time counts from its last recall
    used = scores_of(_row(decay_class="code_snippet", updated_at=_days_ago(80)), NOW, 3, _days_ago(1))
    assert used.freshness == "fresh" and used.idle_days == pytest.approx(1.0)


def test_standing_orders_memories_by_quality_importance_and_decay():
    neutral = scores_of(_row(), NOW)
    assert neutral.standing == pytest.approx(scores.NEUTRAL_STANDING)
    assert scores.ranked_score(0.8, neutral.standing, 0.2) == pytest.approx(0.8)   # neutral keeps its relevance
    dropped = scores_of(_row(importance=0.5, quality_score=0.0), NOW)
    useful = scores_of(_row(quality_score=1.0), NOW, recall_count=5)
    idle = scores_of(_row(updated_at=_days_ago(200)), NOW)
    assert dropped.standing < neutral.standing < useful.standing
    assert idle.standing < neutral.standing
    assert scores.ranked_score(0.8, dropped.standing, 0.2) < 0.8 < scores.ranked_score(0.8, useful.standing, 0.2)
    assert scores.ranked_score(0.8, dropped.standing, 0.0) == 0.8


def test_confidence_defaults_to_the_source_trust():
    assert scores_of(_row(), NOW).confidence == pytest.approx(0.7)
    assert scores_of(_row(confidence=0.95), NOW).confidence == pytest.approx(0.95)


def test_ms_of_parses_iso_and_tolerates_garbage():
    assert scores.ms_of(iso_from_ms(NOW)) == NOW
    assert scores.ms_of("") == 0 and scores.ms_of("not a time") == 0
