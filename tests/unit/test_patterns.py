"""Unit tests for commands.consolidation.patterns (pattern mining over topic clusters)."""

from __future__ import annotations

import hashlib

import pytest

from commands.consolidation.patterns import PatternMember, mine_patterns, shared_terms, summarize


def mem(mid: str, content: str = "", *, ns: str = "alice-main", cat: str = "decision", kind: str = "L1") -> PatternMember:
    return PatternMember(mid, ns, cat, content or f"we use docker compose for service {mid}", kind)


def table(*ms: PatternMember) -> dict[str, PatternMember]:
    return {m.memory_id: m for m in ms}


def test_three_same_category_members_give_one_plan_with_deterministic_id() -> None:
    members = table(mem("m3"), mem("m1"), mem("m2"), mem("f1", cat="fact"))
    plans = mine_patterns([(7, ["m3", "m1", "f1", "m2"])], members)
    assert len(plans) == 1
    p = plans[0]
    assert (p.cluster_id, p.namespace, p.category, p.member_ids) == (7, "alice-main", "decision", ("m1", "m2", "m3"))
    assert p.memory_id == "pattern-" + hashlib.sha256(b"m1,m2,m3").hexdigest()[:16]
    assert p.content.startswith("Recurring decision (3 memories) about ")
    assert "docker" in p.content and "compose" in p.content and len(p.content) <= 1000
    assert mine_patterns([(7, ["m3", "m1", "f1", "m2"])], members) == plans  # deterministic


def test_namespaces_never_mix() -> None:
    members = table(mem("a1"), mem("a2"), mem("b1", ns="bob-main"), mem("b2", ns="bob-main"))
    assert mine_patterns([(1, ["a1", "b1", "a2", "b2"])], members) == []


def test_pattern_memories_and_unknown_ids_do_not_count() -> None:
    members = table(mem("m1"), mem("m2"), mem("old", kind="L2"), mem("p", cat="pattern"))
    assert mine_patterns([(1, ["m1", "m2", "old", "p", "ghost", "m1"])], members) == []
    members["m3"] = mem("m3")
    (plan,) = mine_patterns([(1, ["m1", "m2", "old", "p", "ghost", "m3"])], members)
    assert plan.member_ids == ("m1", "m2", "m3")


def test_existing_pattern_covering_half_skips_the_plan() -> None:
    members = table(*(mem(f"m{i}") for i in range(4)))
    clusters = [(1, ["m0", "m1", "m2", "m3"])]
    assert mine_patterns(clusters, members, existing=[["m0", "m9"]]) != []  # 1 of 4: not covered
    assert mine_patterns(clusters, members, existing=[["m2", "m3", "m9"]]) == []  # 2 of 4
    first = mine_patterns(clusters, members)
    assert mine_patterns(clusters, members, existing=[p.member_ids for p in first]) == []


def test_at_most_one_plan_per_cluster_largest_group_wins() -> None:
    members = table(*(mem(f"d{i}") for i in range(3)), *(mem(f"f{i}", cat="fact") for i in range(4)),
                    *(mem(f"b{i}", ns="bob-main") for i in range(4)))
    (plan,) = mine_patterns([(1, [f"d{i}" for i in range(3)] + [f"f{i}" for i in range(4)])], members)
    assert plan.category == "fact" and len(plan.member_ids) == 4
    # a tie (4 alice facts, 4 bob decisions): category name first
    (tie,) = mine_patterns([(2, [f"b{i}" for i in range(4)] + [f"f{i}" for i in range(4)])], members)
    assert (tie.category, tie.namespace) == ("decision", "bob-main")


def test_the_same_members_in_two_clusters_give_one_plan() -> None:
    members = table(*(mem(f"m{i}") for i in range(3)))
    plans = mine_patterns([(1, ["m0", "m1", "m2"]), (2, ["m2", "m1", "m0"])], members)
    assert [p.cluster_id for p in plans] == [1]


def test_max_members_keeps_the_first_in_cluster_order() -> None:
    ids = [f"m{i:02d}" for i in range(30, 0, -1)]
    members = table(*(mem(i) for i in ids))
    (plan,) = mine_patterns([(1, ids)], members, max_members=20)
    assert plan.member_ids == tuple(sorted(ids[:20]))
    assert plan.content.startswith("Recurring decision (20 memories)")
    with pytest.raises(ValueError):
        mine_patterns([(1, ids)], members, min_members=5, max_members=4)


def test_chinese_summary_names_shared_chinese_terms() -> None:
    contents = ["数据库迁移必须先在测试环境验证", "所有数据库迁移需要在测试环境跑通", "生产数据库迁移前先备份",
                "测试环境验证通过后才能上线"]
    members = table(*(mem(f"c{i}", c, cat="constraint") for i, c in enumerate(contents)))
    (plan,) = mine_patterns([(3, [f"c{i}" for i in range(4)])], members)
    assert plan.content.startswith("Recurring constraint (4 memories) about 数据库迁移, 测试环境")
    assert '"数据库迁移必须先在测试环境验证"' in plan.content
    assert plan.content.count('"') == 6  # three examples


def test_shared_terms_rules() -> None:
    # straddling bigrams (用中, 文回) dropped, single characters ignored, ranked by how many share them
    assert shared_terms(["用户喜欢用中文回复，简洁一些", "回复请用中文", "用户偏好中文回复"]) == ["中文", "回复", "用户"]
    # latin words compared by stem, shown as written; stop words and 1-letter tokens are not terms
    assert shared_terms(["We deploy with docker on a b", "Deploys use docker a", "the b cat"]) == ["deploy", "docker"]
    assert shared_terms(["alpha", "beta"]) == []


def test_summary_is_bounded_and_examples_truncated() -> None:
    text = summarize("fact", ["x " * 500 + "kafka", "kafka " * 300, "kafka"])
    assert len(text) <= 1000 and "about kafka" in text and "…" in text
    assert summarize("fact", ["a", "b", "c"]) == 'Recurring fact (3 memories): "a"; "b"; "c"'
