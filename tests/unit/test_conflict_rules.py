"""The pure parts of conflict handling: text signals (values, negation, update cues, subjects in both
languages), the automatic verdicts of seed 3.3.2, the strategies' winners, and the pair judge's model file."""

from __future__ import annotations

import json

import pytest

from commands.conflicts.auto_resolution import decide
from commands.conflicts.compare import Side, judge
from commands.conflicts.judge import MODEL_PATH, PairModel
from commands.conflicts.resolution import outcome
from commands.conflicts.text_signals import _norm, has_update_cue, negations_of, signals, subject_of, values_of
from commands.errors import Conflict, InvalidCommand


def test_values_are_numbers_times_and_chinese_numerals():
    assert values_of(_norm("ComfyUI 端口是 8,188")) == {"8188"}
    assert values_of(_norm("backups run at 02:30")) == {"02:30"}
    assert values_of(_norm("乐乐下午四点放学")) == {"4"}
    assert values_of(_norm("three nodes in the cluster")) == {"3"}
    assert values_of(_norm("no numbers here")) == frozenset()


def test_negation_in_both_languages_but_not_in_fixed_words():
    assert negations_of(_norm("the NAS does not support ECC")) == 1
    assert negations_of(_norm("user doesn't drink coffee")) == 1
    assert negations_of(_norm("牧尘不喝咖啡")) == 1 and negations_of(_norm("用户没有驾照")) == 1
    assert negations_of(_norm("这个方案不错")) == 0 and negations_of(_norm("非常好用")) == 0   # 不错, 非常
    assert negations_of(_norm("the NAS supports ECC")) == 0


def test_update_cues():
    assert has_update_cue(_norm("ComfyUI now listens on 8189")) and has_update_cue(_norm("端口改为 8189"))
    assert has_update_cue(_norm("用户不再喝咖啡")) and has_update_cue(_norm("switched to Traefik"))
    assert not has_update_cue(_norm("ComfyUI listens on 8189"))
    assert not has_update_cue(_norm("knowledge base"))   # "now" inside a word is no cue


def test_subjects():
    assert subject_of(_norm("The user's wife Jenna prefers a window seat")) == {"wife", "jenna"}
    assert subject_of(_norm("老周不吃辣")) == {"老", "周"}
    assert subject_of(_norm("ComfyUI's web UI port is 8189")) == {"comfyui", "web", "ui", "port"}


def _row(mid: str, source: str, ts: str) -> dict:
    return {"id": mid, "source": source, "timestamp": ts}


def test_automatic_verdicts_in_the_seeds_order():
    old, new = _row("a", "user_verbal", "2026-01-01T00:00:00Z"), _row("b", "llm_distill", "2026-01-02T00:00:00Z")
    v = decide("entity", old, new)
    assert (v.strategy, v.rule, v.winner, v.loser) == ("trust_wins", "trust_gap", "a", "b")     # 1.0 vs 0.4
    old, new = _row("a", "user_chat", "2026-01-01T00:00:00Z"), _row("b", "config_parse", "2026-05-01T00:00:00Z")
    v = decide("entity", old, new)
    assert (v.rule, v.winner) == ("age_gap", "b")                                               # 120 days
    old, new = _row("a", "config_parse", "2026-01-01T00:00:00Z"), _row("b", "config_parse", "2026-01-03T00:00:00Z")
    assert (decide("entity", old, new).rule, decide("entity", new, old).winner) == ("same_source", "b")
    old, new = _row("a", "user_chat", "2026-01-01T00:00:00Z"), _row("b", "config_parse", "2026-01-03T00:00:00Z")
    assert decide("entity", old, new) is None                                                    # ask a person
    assert decide("importance", old, new).winner == "b"
    # the learned profile: people chose config_parse over user_chat three times, never the other way
    v = decide("entity", old, new, {"config_parse": 3})
    assert (v.strategy, v.rule, v.winner) == ("trust_wins", "profile", "b")
    assert decide("entity", old, new, {"config_parse": 3, "user_chat": 1}) is None   # people disagreed
    assert decide("entity", old, new, {"config_parse": 2}) is None                   # too few verdicts


def test_strategies_pick_the_winner():
    conflict = {"conflict_id": "c", "memory_ids": ["b", "a"], "kind": "entity"}
    rows = {"a": _row("a", "x", "2026-01-01T00:00:00Z"), "b": _row("b", "x", "2026-01-02T00:00:00Z")}
    assert outcome("latest_wins", conflict, rows) == outcome("primary_wins", conflict, rows)
    assert (outcome("latest_wins", conflict, rows).winner, outcome("latest_wins", conflict, rows).loser) == ("b", "a")
    assert outcome("ask_user", conflict, rows, "a").loser == "b"
    assert outcome("keep_both", conflict, rows).loser == ""
    with pytest.raises(InvalidCommand):
        outcome("ask_user", conflict, rows)
    with pytest.raises(InvalidCommand):
        outcome("latest_wins", conflict, rows, "a")
    with pytest.raises(Conflict):
        outcome("auto_merge", conflict, rows)
    assert outcome("auto_merge", {**conflict, "kind": "importance"}, rows).merge


def test_the_pair_judge_is_deterministic_and_refuses_other_features(tmp_path):
    model = PairModel.load()
    assert "heldout1" in model.trained_on["excluded"] and "heldout2" in model.trained_on["excluded"]
    old = Side("a", signals("The backup job runs at 02:00 every night"), "alice", "user_chat")
    new = Side("b", signals("The backup job runs nightly at 03:30"), "bob", "config_parse")
    first = judge(new, old, 0.82, model)
    assert first == judge(new, old, 0.82, model) and first.relation == "conflict" and first.kind == "entity"
    update = Side("b", signals("The backup job now runs nightly at 03:30"), "bob", "config_parse")
    assert judge(update, old, 0.82, model).relation == "replacement"
    doc = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    doc["features"] = doc["features"][:-1]
    (tmp_path / "m.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match="other features"):
        PairModel.load(tmp_path / "m.json")
