"""Evaluation metrics (seed 6.1) and the rule-based golden query generator."""

from __future__ import annotations

from projections.queries.evaluation.eval_log import trend
from projections.queries.evaluation.metrics import EvalQuery, score_query, summarize
from projections.queries.evaluation.golden_rules import SourceMemory, easy, generate, golden_set_id, keywords


def test_score_query_recall_precision_and_reciprocal_rank():
    q = EvalQuery("q", ("m2", "m9"), tag="system_fact", agent_id="a")
    s = score_query(q, ["m1", "m2", "m3", "m4", "m5", "m9"], top_k=10)
    assert s.recall_at_5 == 0.5 and s.precision_at_5 == 1 / 5
    assert s.recall_at_k == 1.0 and s.reciprocal_rank == 0.5
    assert s.hits == ("m2", "m9") and s.misses == ()
    none = score_query(EvalQuery("q", ("x",)), [], top_k=5)
    assert (none.recall_at_5, none.precision_at_5, none.reciprocal_rank, none.misses) == (0.0, 0.0, 0.0, ("x",))


def test_summarize_by_tag_and_agent():
    scores = [score_query(EvalQuery("a", ("m1",), "system_fact", "alice"), ["m1"], 5),
              score_query(EvalQuery("b", ("m2",), "system_fact", "bob"), ["m3"], 5),
              score_query(EvalQuery("c", ("m4",), "user_pref", "alice"), ["m5", "m4"], 5)]
    m = summarize(scores, 5)
    assert m["recall_at_5"] == round(2 / 3, 6)
    assert m["mean_reciprocal_rank"] == round((1 + 0 + 0.5) / 3, 6)
    assert m["recall_at_5_by_tag"] == {"system_fact": 0.5, "user_pref": 1.0}
    assert m["recall_by_agent"] == {"alice": 1.0, "bob": 0.0}


def test_trend_flags_a_regression_of_more_than_five_points():
    runs = [{"metrics": {"recall_at_5": 0.7, "precision_at_5": 0.2, "mean_reciprocal_rank": 0.6}},
            {"metrics": {"recall_at_5": 0.8, "precision_at_5": 0.2, "mean_reciprocal_rank": 0.7}}]
    delta, regressed = trend(runs)
    assert delta == {"recall_at_5": -0.1, "precision_at_5": 0.0, "mean_reciprocal_rank": -0.1} and regressed
    assert trend(runs[:1]) == (None, False)
    assert trend([runs[1], runs[0]])[1] is False


MEMS = [SourceMemory("m1", "ComfyUI 端口是 8189（8188 被占用）", "system_fact", "a"),
        SourceMemory("m2", "The user prefers short answers, conclusion first", "user_pref", "a"),
        SourceMemory("m3", "主力机显卡是 RTX 3050，4GB 显存", "system_fact", "b"),
        SourceMemory("m4", "Deploy with docker compose up -d on the staging host", "tool_usage", "b"),
        SourceMemory("m5", "Decided to use PostgreSQL for the billing service", "proj_context", "b")]


def test_generator_is_deterministic_and_covers_kinds_and_difficulties():
    a, b = generate(MEMS, 12, seed=3), generate(list(reversed(MEMS)), 12, seed=3)
    assert a == b and len(a) == 12
    assert {q.tag for q in a} == {"system_fact", "user_pref", "proj_context", "tool_usage"}
    assert {q.difficulty for q in a} == {"easy", "medium", "hard"}
    assert len({(q.expected_ids, q.difficulty) for q in a}) == 12  # no (memory, difficulty) twice
    assert golden_set_id(3, a) == golden_set_id(3, b) != golden_set_id(4, a)
    for q in a:
        assert q.query.strip() and len(q.expected_ids) == 1


def test_generator_stops_when_every_memory_and_difficulty_is_used():
    assert len(generate(MEMS[:1], 12, seed=0)) == 3
    assert generate([], 12) == []


def test_easy_is_a_verbatim_phrase_and_keywords_handle_chinese():
    assert easy("ComfyUI 端口是 8189（8188 被占用）") in "ComfyUI 端口是 8189（8188 被占用）"
    assert "显卡" in "".join(keywords("主力机显卡是 RTX 3050")) and "RTX" in keywords("主力机显卡是 RTX 3050")
    assert "the" not in keywords("the user prefers short answers")
