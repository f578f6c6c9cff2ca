"""Lexical text preparation: tokens, Chinese n-grams, query stripping, a real FTS hit."""

from __future__ import annotations

import pyarrow as pa
import pytest

from projections.text.lexical import FTS_CONFIG, QUERY_STOP_WORDS, index_text, query_text, tokens


def test_latin_words_are_lower_cased_and_split_on_punctuation() -> None:
    assert tokens("Marisol: I'm GOING to the café, OK?") == ["marisol", "i", "m", "going", "to", "the", "café", "ok"]
    assert index_text("Hello,   World!\n2023") == "hello world 2023"


def test_chinese_runs_give_unigrams_and_bigrams() -> None:
    assert tokens("喜欢猫") == ["喜", "欢", "猫", "喜欢", "欢猫"]
    assert tokens("我在北京 coffee") == ["我", "在", "北", "京", "我在", "在北", "北京", "coffee"]
    assert tokens("ＡＢＣ１２３") == ["abc123"]  # full-width forms are NFKC-folded


def test_query_drops_question_words_in_both_languages() -> None:
    assert query_text("When did Marisol go to the pottery workshop group?") == "marisol go pottery workshop group"
    zh = query_text("小明什么时候去了北京？")
    assert "北京" in zh.split() and "什么" not in zh and "时候" not in zh.split()
    assert "what" in QUERY_STOP_WORDS


def test_query_falls_back_to_all_tokens_and_handles_empty() -> None:
    assert query_text("What is it?") == "what is it"
    assert query_text("?!…") == ""
    assert index_text("") == ""


def test_pure_and_deterministic() -> None:
    text = "Melanie: 我们周末去 camping, it's fun!"
    assert index_text(text) == index_text(text) == " ".join(tokens(text))
    assert query_text(text) == query_text(text)


def test_chinese_query_hits_chinese_memory_through_lancedb_fts(tmp_path) -> None:
    lancedb = pytest.importorskip("lancedb")
    from lancedb.index import FTS

    rows = {
        "m1": "用户喜欢在周末喝手冲咖啡",
        "m2": "项目的数据库使用 PostgreSQL 16",
        "m3": "Marisol went to the pottery workshop group on 7 May",
        "m4": "部署前必须运行全部测试",
    }
    db = lancedb.connect(str(tmp_path))
    table = db.create_table(
        "m", pa.table({"id": list(rows), "search_text": [index_text(v) for v in rows.values()]})
    )
    table.create_index("search_text", config=FTS(**FTS_CONFIG))

    def top(query: str) -> str:
        hits = table.search(query_text(query), query_type="fts").select(["id", "_score"]).limit(3).to_list()
        return hits[0]["id"]

    assert top("用户喜欢喝什么咖啡？") == "m1"
    assert top("数据库用的是哪个版本？") == "m2"
    assert top("部署之前要做什么") == "m4"
    assert top("When did Marisol go to the pottery workshop groups?") == "m3"  # stemming: groups -> group
