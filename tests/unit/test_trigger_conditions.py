"""The eight triggers' conditions, cooldowns, pause and urgency order (seed 6.4), as pure functions."""

from __future__ import annotations

from commands.triggers.specs import BY_NAME, SPECS, Inputs, evaluate, evaluate_all

H = 3_600_000
T0 = 1_800_000_000_000


def _inputs(now_h: float = 0.0, **fields) -> Inputs:
    return Inputs(now_ms=T0 + int(now_h * H), origin_ms=T0, **fields)


def _eval(name: str, inputs: Inputs):
    return evaluate(BY_NAME[name], inputs)


def test_the_eight_triggers_have_ascii_names_and_the_seeds_cooldowns():
    assert [s.name for s in SPECS] == ["distill", "merge", "prune", "decay", "backtrace", "conflict", "gap",
                                       "consolidation"]
    assert {s.name: s.cooldown_s for s in SPECS} == {
        "distill": 60, "merge": 600, "prune": 86_400, "decay": 21_600, "backtrace": 86_400, "conflict": 60,
        "gap": 1_800, "consolidation": 86_400}


def test_time_triggers_count_from_the_log_start_then_from_their_last_firing():
    assert not _eval("decay", _inputs(5.9)).due and _eval("decay", _inputs(6.0)).due
    assert not _eval("prune", _inputs(23)).due and _eval("prune", _inputs(24)).due
    fired = {"decay": {"last_fired_ms": T0 + 10 * H, "last_attempt_ms": T0 + 10 * H}}
    assert not _eval("decay", _inputs(15, state=fired)).due
    e = _eval("decay", _inputs(16, state=fired))
    assert e.due and e.urgency == 1.0


def test_a_trigger_does_not_fire_within_its_cooldown_even_when_its_condition_holds():
    state = {"conflict": {"last_fired_ms": T0, "last_attempt_ms": T0, "marks": {}}}
    busy = _inputs(30 / 3600, state=state, writes={"conflict": 3})
    e = _eval("conflict", busy)
    assert e.holds and not e.due and e.cooling_until_ms == T0 + 60_000
    assert _eval("conflict", _inputs(61 / 3600, state=state, writes={"conflict": 3})).due
    assert not _eval("conflict", _inputs(1, state=state, writes={"conflict": 0})).holds


def test_a_failed_attempt_starts_the_cooldown_too():
    state = {"decay": {"last_fired_ms": 0, "last_attempt_ms": T0 + 7 * H, "failures": 1}}
    assert not _eval("decay", _inputs(8, state=state)).due


def test_paused_and_disabled_triggers_never_fire():
    paused = {"prune": {"paused": True}}
    e = _eval("prune", _inputs(48, state=paused))
    assert e.holds and not e.due
    e = _eval("merge", _inputs(1, writes={"merge": 5}, disabled={"merge": "ZHIYI_MERGE is off"}))
    assert not e.due and e.disabled == "ZHIYI_MERGE is off" and e.urgency == 0.0
    assert not _eval("gap", _inputs(1000)).holds


def test_distill_fires_on_a_full_queue_or_an_old_one():
    assert _eval("distill", _inputs(distill_queue=10, distill_oldest_ms=T0)).due
    young = _inputs(0, distill_queue=3, distill_oldest_ms=T0 - 299_000)
    assert not _eval("distill", young).holds
    assert _eval("distill", _inputs(0, distill_queue=3, distill_oldest_ms=T0 - 300_000)).due
    assert not _eval("distill", _inputs(0)).holds


def test_backtrace_and_consolidation_count_distilled_memories_since_their_marks():
    mark = {"backtrace": {"last_fired_ms": T0, "last_attempt_ms": T0, "marks": {"distilled": 100}},
            "consolidation": {"last_fired_ms": T0, "last_attempt_ms": T0, "marks": {"distilled": 100}}}
    assert not _eval("backtrace", _inputs(25, state=mark, distilled=150)).holds       # 50, not > 50
    assert _eval("backtrace", _inputs(25, state=mark, distilled=151)).due
    assert not _eval("backtrace", _inputs(23, state=mark, distilled=500)).due         # cooling
    # consolidation: > 50 distilled and 24 h, or 48 h
    assert not _eval("consolidation", _inputs(23.9, state=mark, distilled=500)).holds
    assert _eval("consolidation", _inputs(24, state=mark, distilled=151)).due
    assert not _eval("consolidation", _inputs(47, state=mark, distilled=120)).holds
    assert _eval("consolidation", _inputs(48, state=mark, distilled=100)).due


def test_the_list_is_sorted_by_urgency_descending():
    out = evaluate_all(_inputs(12, writes={"conflict": 5, "merge": 50}))
    urgencies = [e.urgency for e in out]
    assert urgencies == sorted(urgencies, reverse=True)
    assert out[0].name in ("decay", "merge") and out[0].urgency == 1.0
    assert {e.name for e in out} == set(BY_NAME)
