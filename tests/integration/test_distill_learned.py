"""The learned distillation judge (`learned:v1`) with the real bundled multilingual-e5-small and the
shipped weights: it loads and checks itself, keeps facts and drops chatter the rules let through,
records its probability, and the setting that chooses it is validated."""

from __future__ import annotations

import json

import pytest

from commands.distill.engine import distill_by_rules
from commands.distill.learned import MODEL_PATH, StatementJudge, StatementModel, feature_names
from gateway.process.settings import Environment, Settings
from projections.models.e5 import E5Encoder


@pytest.fixture(scope="module")
def judge() -> StatementJudge:
    return StatementJudge(E5Encoder(), StatementModel.load())


def _chat(*lines: str) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": line} for i, line in enumerate(lines)]


def test_the_shipped_model_matches_the_code_and_its_encoder():
    doc = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    model = StatementModel.load()
    assert model.features == tuple(feature_names()) and model.encoder == E5Encoder.model_id
    assert model.weights.shape == (E5Encoder.dim + len(model.features),) and 0.5 <= model.threshold < 1
    assert doc["trained_on"]["episodes"] >= 600 and "heldout6" in doc["trained_on"]["excluded"]


def test_facts_are_kept_chatter_dropped_and_the_probability_recorded(judge):
    turns = _chat("hey, quick one", "Sure, go ahead!",
                  "my homelab box is a dell r730 with 128gb of ram, it runs proxmox 8", "Nice box.",
                  "我对青霉素过敏，记一下", "好的，已记下。",
                  "haha ok thanks a lot, that's all for today", "Anytime!")
    outcome = distill_by_rules("conversation", "ok", turns, judge)
    assert outcome.extractor == "learned:v1" and not outcome.verdict.skip
    contents = [c.content for c in outcome.candidates]
    assert len(contents) == 2 and "r730" in contents[0] and "青霉素" in contents[1], contents
    for candidate in outcome.candidates:
        scores = dict(candidate.scores)
        assert 0.0 <= scores["learned"] <= 1.0 and "rule" in scores, scores
    assert distill_by_rules("conversation", "ok", _chat("lol", "😄", "ok bye", "Bye!"), judge).candidates == []


def test_the_judge_refuses_weights_it_cannot_use(tmp_path):
    doc = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps({**doc, "features": doc["features"][:-1]}), encoding="utf-8")
    with pytest.raises(ValueError, match="retrain"):
        StatementModel.load(stale)
    other = StatementModel.load()
    with pytest.raises(ValueError, match="trained on"):
        StatementJudge(E5Encoder(), StatementModel(other.weights, other.bias, other.threshold, "some:other-model",
                                                   other.features))


def test_the_extractor_setting_is_read_and_validated():
    assert Environment.read({}).distill_extractor == "learned"
    assert Environment.read({"ZHIYI_DISTILL_EXTRACTOR": " Rules "}).distill_extractor == "rules"
    with pytest.raises(ValueError, match="ZHIYI_DISTILL_EXTRACTOR must be one of learned, rules, not 'magic'"):
        Environment.read({"ZHIYI_DISTILL_EXTRACTOR": "magic"})
    with pytest.raises(ValueError, match="distill_extractor must be one of learned, rules"):
        Settings(redis_url="redis://x", data_dir="d", api_key="k", distill_extractor="magic")


def test_the_cli_names_a_bad_setting_in_one_line(monkeypatch, capsys):
    from gateway.cli.main import main

    monkeypatch.setenv("ZHIYI_DISTILL_EXTRACTOR", "magic")
    assert main(["events", "--help"]) == 2
    assert capsys.readouterr().err.strip() == (
        "zhiyi: bad environment: ZHIYI_DISTILL_EXTRACTOR must be one of learned, rules, not 'magic'")
