"""Query expansion with synonyms: normalisation, CJK substring vs latin whole-word matching."""

from __future__ import annotations

from projections.synonyms.reader import SynonymTable, normalize_term, occurs


def table(*groups: tuple[str, ...], ns: str = "shared") -> SynonymTable:
    rows = []
    for group in groups:
        for a in group:
            for b in group:
                if normalize_term(a) != normalize_term(b):
                    rows.append((ns, normalize_term(a), normalize_term(b), b))
    return SynonymTable.from_rows(rows)


def test_normalize_is_case_and_width_insensitive_for_latin_and_keeps_chinese():
    assert normalize_term("  K8S   Cluster ") == "k8s cluster"
    assert normalize_term("ＲＥＤＩＳ") == "redis"  # full-width latin
    assert normalize_term("数据库") == "数据库"


def test_latin_terms_match_whole_words_only():
    assert occurs("db", "the db is down") == 4
    assert occurs("db", "dbs are down") == -1
    assert occurs("db", "mongodb is down") == -1
    assert occurs("redis", "用redis缓存") == 1  # CJK next to a latin word is a boundary
    assert occurs("c++", "c++ compiler") == 0
    assert occurs("machine learning", "about machine learning models") == 6


def test_cjk_terms_match_as_substrings():
    assert occurs("数据库", "主数据库挂了") == 1
    assert occurs("数据库", "数据") == -1


def test_expansion_is_symmetric_and_skips_terms_already_present():
    t = table(("k8s", "Kubernetes", "容器编排"))
    assert t.expansions("how do I restart K8S pods") == ["Kubernetes", "容器编排"]
    assert t.expansions("kubernetes 集群") == ["k8s", "容器编排"]
    assert t.expansions("容器编排怎么做") == ["k8s", "Kubernetes"]  # by normalized synonym
    assert t.expansions("k8s and kubernetes") == ["容器编排"]
    assert t.expansions("nothing relevant") == []
    assert t.expansions("   ") == []


def test_groups_are_not_merged_transitively():
    t = table(("bank", "river bank"), ("bank", "finance"))
    assert sorted(t.expansions("bank")) == ["finance", "river bank"]
    assert t.expansions("finance news") == ["bank"]  # not "river bank"


def test_namespaces_scope_the_expansion_and_order_follows_the_query():
    rows = [("shared", "db", "database", "database"), ("shared", "database", "db", "db"),
            ("alice-main", "gpu", "显卡", "显卡"), ("alice-main", "显卡", "gpu", "GPU")]
    t = SynonymTable.from_rows(rows)
    assert t.expansions("gpu and db") == ["显卡", "database"]
    assert t.expansions("gpu and db", ["shared"]) == ["database"]
    assert t.expansions("gpu and db", ["bob-main"]) == []


def test_expansion_finds_both_scripts_among_a_thousand_groups():
    """Correctness at size; its cost per call is measured by tests/bench/synonyms.py."""
    t = table(*[(f"term{i}", f"syn{i}", f"同义{i}") for i in range(1000)])
    out = t.expansions("a fairly ordinary recall query about term17 and 同义42 with some more words")
    # 同义4 matches inside 同义42 too: Chinese terms match as substrings
    assert set(out) == {"syn17", "同义17", "term42", "syn42", "term4", "syn4"}
