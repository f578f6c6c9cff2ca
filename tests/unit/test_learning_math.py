"""V-value propagation (seed 6.3) and skill eta (seed 6.5) against worked examples computed by hand."""

from __future__ import annotations

import pytest

from commands.learning.skills import Posterior, eligible, skill_name, status_of
from commands.learning.values import alpha, propagate
from projections.memories.scores import DAY_MS, value_now, valued_standing


def test_value_propagates_back_along_a_two_step_trace():
    # step 1 served m1, m2; step 2 (the last, nearest the outcome) served m3; R = 0.8, gamma = 0.95
    # useful votes: m1 0 -> alpha 1; m2 1 -> alpha 1/2; m3 3 -> alpha 1/4
    # step 2: V_3 = 0            v(m3) = 0.25 x 0.8 + 0.75 x 0.95 x 0      = 0.2        V_2 = 0.2
    # step 1:                    v(m1) = 1 x 0.8 + 0 x 0.95 x 0.2          = 0.8
    #                            v(m2) = 0.5 x 0.8 + 0.5 x 0.95 x 0.2      = 0.4 + 0.095 = 0.495
    values = propagate([["m1", "m2"], ["m3"]], {"m1": 0, "m2": 1, "m3": 3}, 0.8)
    assert [(v.memory_id, round(v.v, 9), v.alpha, v.step) for v in values] == [
        ("m1", 0.8, 1.0, 1), ("m2", 0.495, 0.5, 1), ("m3", 0.2, 0.25, 2)]


def test_a_three_step_trace_discounts_what_it_passes_back():
    # steps [a], [b], [c], every memory with 1 useful vote (alpha 1/2), R = 1
    # V_3 = v(c) = 0.5                                   (0.5 x 1 + 0.5 x 0.95 x 0)
    # V_2 = v(b) = 0.5 + 0.5 x 0.95 x 0.5 = 0.7375
    # V_1 = v(a) = 0.5 + 0.5 x 0.95 x 0.7375 = 0.8503125
    values = {v.memory_id: round(v.v, 9) for v in propagate([["a"], ["b"], ["c"]], {"a": 1, "b": 1, "c": 1}, 1.0)}
    assert values == {"a": 0.8503125, "b": 0.7375, "c": 0.5}


def test_a_memory_served_twice_keeps_the_value_of_its_last_step_and_a_negative_reward_propagates():
    # [x, y] then [x]; R = -0.5; x 0 votes (alpha 1), y 3 votes (alpha 1/4)
    # step 2: v(x) = -0.5                                   V_2 = -0.5
    # step 1: v(x) = -0.5 (not kept: its last step is 2); v(y) = 0.25 x -0.5 + 0.75 x 0.95 x -0.5 = -0.48125
    values = {v.memory_id: (round(v.v, 9), v.step) for v in propagate([["x", "y"], ["x"]], {"y": 3}, -0.5)}
    assert values == {"x": (-0.5, 2), "y": (-0.48125, 1)}


def test_alpha_is_one_over_useful_feedback_plus_one():
    assert [alpha(n) for n in (0, 1, 3, 9)] == [1.0, 0.5, 0.25, 0.1]


def test_a_value_is_whole_for_90_days_then_halves_every_30():
    at = 1_000 * DAY_MS
    assert value_now(0.8, at, at + 90 * DAY_MS) == 0.8
    assert value_now(0.8, at, at + 120 * DAY_MS) == pytest.approx(0.4)
    assert value_now(0.8, at, at + 150 * DAY_MS) == pytest.approx(0.2)
    assert valued_standing(0.5, 0.8) == pytest.approx(0.7)      # 0.5 x (1 + 0.5 x 0.8)
    assert valued_standing(0.5, -1.0) == pytest.approx(0.25)
    assert valued_standing(0.5, 0.0) == 0.5


def test_skill_eta_follows_beta_bernoulli_from_its_useful_votes():
    # crystallised with 3 useful votes, 0 not useful: alpha = 1 + 3 = 4, beta = 1 + 0 = 1
    p = Posterior(3, 0)
    assert (p.alpha, p.beta, p.eta, p.status) == (4.0, 1.0, 0.8, "active")        # 4 / 5
    trail = []
    for success in (False, False, False, False, True):
        p = p.after(success)
        trail.append((p.alpha, p.beta, round(p.eta, 6), p.status))
    assert trail == [(4.0, 2.0, 0.666667, "probation"),     # 4 / 6
                     (4.0, 3.0, 0.571429, "probation"),     # 4 / 7
                     (4.0, 4.0, 0.5, "probation"),          # 4 / 8: 0.5 is probation
                     (4.0, 5.0, 0.444444, "retired"),       # 4 / 9
                     (5.0, 5.0, 0.5, "probation")]          # 5 / 10: a success brings it back


def test_status_thresholds_and_eligibility():
    assert [status_of(x) for x in (0.8, 0.79, 0.5, 0.49)] == ["active", "probation", "probation", "retired"]
    assert eligible("pattern", "active", 3, 0, False)
    assert not eligible("pattern", "active", 2, 0, False)         # < 3 useful votes
    assert not eligible("pattern", "active", 3, 1, False)         # a pending conflict
    assert not eligible("pattern", "deprecated", 5, 0, False)
    assert not eligible("fact", "active", 5, 0, False)            # not a pattern
    assert not eligible("pattern", "active", 5, 0, True)          # a skill already


def test_skill_names_are_url_safe():
    assert skill_name("Recurring decision: deploy the billing service with docker compose",
                      "3F2A1B9C-aaaa") == "decision-deploy-billing-service-with-3f2a1b9c"
    assert skill_name("用户喜欢用中文回复", "abc12345-x") == "skill-abc12345"
