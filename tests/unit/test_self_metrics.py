"""The seven self-metrics of seed 3.2.3: each definition, its null with a reason, and its health band."""

from __future__ import annotations

from projections.metrics.self_metrics import self_metrics

DAYS = [f"2026-11-{d:02d}" for d in range(20, 30)]


def _by_name(daily: dict, days: list[str] = DAYS) -> dict:
    return {m["name"]: m for m in self_metrics(days, daily)}


def test_each_definition_on_one_days_counts():
    m = _by_name({DAYS[-1]: {"useful": 8, "not_useful": 2, "recalls": 10, "recall_misses": 3, "cascades": 3,
                             "dependants_of_corrected": 4, "forgotten": 3, "backtrace_sampled": 20,
                             "backtrace_lossy": 2, "conflicts_resolved": 4, "conflicts_auto_resolved": 3}})
    assert m["useful_rate"]["value"] == 0.8 and m["useful_rate"]["status"] == "healthy"
    assert m["hit_rate"]["value"] == 0.7 and m["hit_rate"]["status"] == "warning"          # 0.5 <= 0.7 <= 0.8
    assert m["correction_propagation"]["value"] == 0.75 and m["correction_propagation"]["status"] == "healthy"
    assert m["junk_elimination"]["value"] == 3.0 and m["junk_elimination"]["status"] == "healthy"
    assert m["loss_rate"]["value"] == 0.1 and m["loss_rate"]["status"] == "healthy"
    assert m["auto_resolve_rate"]["value"] == 0.75
    assert m["gap_closure"]["value"] is None and m["gap_closure"]["reason"].startswith("no knowledge gap")
    assert len(m["useful_rate"]["trend"]) == 10 and m["useful_rate"]["trend"][-1] == {"day": DAYS[-1], "value": 0.8}


def test_no_input_is_null_with_a_reason():
    m = _by_name({})
    for name in ("useful_rate", "hit_rate", "correction_propagation", "loss_rate", "auto_resolve_rate"):
        assert m[name]["value"] is None and m[name]["status"] == "no_data" and m[name]["reason"], name
    assert m["junk_elimination"]["value"] == 0.0 and m["junk_elimination"]["status"] == "alert"   # seed: 0 = failing


def test_alert_bands():
    m = _by_name({DAYS[-1]: {"recalls": 10, "recall_misses": 6, "forgotten": 21, "backtrace_sampled": 10,
                             "backtrace_lossy": 4}})
    assert m["hit_rate"]["status"] == "alert" and m["junk_elimination"]["status"] == "alert"
    assert m["loss_rate"]["status"] == "alert"


def test_a_useful_rate_falling_seven_days_in_a_row_alerts_even_while_high():
    falling = {day: {"useful": 100 - i, "not_useful": i} for i, day in enumerate(DAYS)}
    m = _by_name(falling)
    assert m["useful_rate"]["value"] > 0.9 and m["useful_rate"]["status"] == "alert"
    flat = {day: {"useful": 9, "not_useful": 1} for day in DAYS}
    assert _by_name(flat)["useful_rate"]["status"] == "healthy"


def test_auto_resolve_rate_should_rise():
    m = _by_name({DAYS[-2]: {"conflicts_resolved": 2, "conflicts_auto_resolved": 2},
                  DAYS[-1]: {"conflicts_resolved": 2, "conflicts_auto_resolved": 1}})
    assert m["auto_resolve_rate"]["status"] == "warning"


def test_gap_closure_is_cumulative_over_the_window():
    m = _by_name({DAYS[2]: {"gaps_detected": 4}, DAYS[5]: {"gaps_closed": 1}, DAYS[-1]: {"gaps_detected": 1,
                                                                                        "gaps_closed": 2}})
    trend = [t["value"] for t in m["gap_closure"]["trend"]]
    assert trend[:2] == [None, None] and trend[2:5] == [0.0, 0.0, 0.0] and trend[5] == 0.25
    assert m["gap_closure"]["value"] == 0.6 and m["gap_closure"]["status"] == "warning"      # 3 closed / 5
