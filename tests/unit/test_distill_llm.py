"""The LLM extractor's answer handling (commands.distill.llm_extractor): seed 3.1's weights and
threshold, depends_on re-indexed to the kept memories, unusable answers refused."""

from __future__ import annotations

import orjson
import pytest

from commands.distill.llm_extractor import batch_prompt, keep, overall, parse_batch

DURABLE = {"IS": 0.9, "SU": 0.8, "PA": 0.8, "VD": 0.9, "RU": 0.9}
WEAK_BUT_LASTING = {"IS": 0.3, "SU": 0.3, "PA": 0.3, "VD": 0.85, "RU": 0.3}
WEAK = {"IS": 0.7, "SU": 0.7, "PA": 0.7, "VD": 0.7, "RU": 0.7}


def test_the_seed_weights_and_threshold():
    assert overall(DURABLE) == pytest.approx(0.2 * .9 + 0.2 * .8 + 0.15 * .8 + 0.25 * .9 + 0.2 * .9)
    assert keep(DURABLE) and keep(WEAK_BUT_LASTING)          # overall > 0.7, or VD > 0.8
    assert not keep(WEAK)                                     # exactly 0.7 is not above it


def test_kept_memories_carry_scores_and_their_dependencies():
    answer = {"episodes": [
        {"index": 1, "memories": [
            {"content": "hello there", "category": "fact", "scores": WEAK, "depends_on": []},
            {"content": "staging runs  Postgres 16", "category": "fact", "scores": DURABLE, "depends_on": []},
            {"content": "move staging next week", "category": "decision", "scores": DURABLE, "depends_on": [0, 1, 7]},
            {"content": "x", "category": "bogus", "scores": {**DURABLE, "IS": 3}},
            {"content": "no scores", "category": "fact"}, "not an object"]},
        {"index": 9, "memories": [{"content": "out of range", "category": "fact", "scores": DURABLE}]}]}
    first, second = parse_batch(orjson.dumps(answer).decode(), 2)
    assert first == []                                        # the answer left it out
    assert [(c.content, c.category, c.depends_on) for c in second] == [
        ("staging runs Postgres 16", "fact", ()), ("move staging next week", "decision", (0,)), ("x", "fact", ())]
    scores = dict(second[2].scores)
    assert scores["IS"] == 1.0 and set(scores) == {"IS", "SU", "PA", "VD", "RU", "overall"}   # clamped
    assert {c.source for c in second} == {"llm_distill"}


@pytest.mark.parametrize("answer", ["not json", "[]", '{"episodes": "x"}', "{}"])
def test_an_unusable_answer_is_refused(answer):
    with pytest.raises(ValueError):
        parse_batch(answer, 1)


def test_the_prompt_numbers_the_episodes_and_bounds_their_size():
    doc = orjson.loads(batch_prompt([[{"role": "user", "content": "a"}],
                                     [{"role": "user", "content": "x" * 9000, "at": "2026-01-01"},
                                      {"role": "user", "content": "y" * 9000}]]))
    assert [e["index"] for e in doc["episodes"]] == [0, 1]
    assert doc["episodes"][1]["turns"] == [{"role": "user", "content": "x" * 9000}]   # the second would pass 12k
