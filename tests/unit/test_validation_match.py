"""PassiveValidator matching (spec 3.3.4): P1 entities, P2 shared words, P3 n-gram overlap."""

from __future__ import annotations

import dataclasses
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commands.reactions import validation_match as vm
from commands.reactions.validation_match import Match, bump, features, match, match_features, overlap_coefficient
from projections.text.entities import entity_keys


def test_constants_follow_the_spec() -> None:
    assert vm.P1_DELTA == vm.P2_DELTA == vm.P3_DELTA == 0.15
    assert vm.P3_ACCUMULATED_DELTA == 0.10
    assert (vm.P3_STRONG, vm.P3_WEAK, vm.P3_PARTIALS_NEEDED, vm.CONFIDENCE_CAP) == (0.25, 0.12, 3, 1.0)


@pytest.mark.parametrize(
    ("new", "old", "evidence"),
    [
        ("nginx listens on port 8080", "Our proxy: port 8080 is used by nginx", ("port:8080",)),
        ("ComfyUI 端口: 8188", "ComfyUI 的端口是 8188，记得开防火墙", ("name:comfyui", "port:8188")),
        ("配置在 /etc/nginx/nginx.conf", "edited /etc/nginx/nginx.conf yesterday", ("path:/etc/nginx/nginx.conf",)),
        ("Set REDIS_URL before start", "REDIS_URL 要写进 .env", ("identifier:redis_url",)),
        ("升级到 Python 3.11", "python 3.11 breaks pickles", ("version:3.11",)),
        ("服务器是192.168.1.10", "ssh 192.168.1.10:22 works", ("ip:192.168.1.10",)),
        ("用户想要《百年孤独》的英文版", "《百年孤独》翻译很好", ("term:百年孤独",)),
        ("连接池配置的大小", "调整了连接池配置", ("term:连接池配置",)),
    ],
)
def test_p1_shared_entities(new: str, old: str, evidence: tuple[str, ...]) -> None:
    assert match(new, old) == Match("P1", 0.15, evidence)


def test_p1_ignores_entities_too_generic_alone() -> None:
    # a 2-character Chinese term or a 2-letter name is an entity, but not evidence by itself
    assert "term:配置" in entity_keys("检查，配置") and features("检查，配置").entities == ()
    assert "name:ai" in entity_keys("ask AI now") and features("ask AI now").entities == ()
    found = match("请检查，配置", "配置，更新")
    assert found is not None and found.level == "P3"  # the short texts still overlap
    assert match("AI is everywhere", "ask AI") is None


def test_p2_shared_english_words_compare_stems() -> None:
    found = match("The user prefers dark themes in editors", "user said editors should use a dark theme")
    assert found is not None and found.level == "P2" and found.delta == 0.15
    assert found.evidence == ("user", "dark", "theme", "editor")
    found = match("deploy service after tests pass", "deployment happens once all tests passed")
    assert found is not None and found.level == "P2" and found.evidence == ("deploy", "test", "pass")


def test_p2_shared_chinese_bigrams() -> None:
    found = match("用户喜欢深色主题", "这个用户在编辑器里喜欢用深色主题")
    assert found is not None and found.level == "P2"
    assert found.evidence[:3] == ("用户", "喜欢", "深色")
    found = match("数据库很慢", "数据库迁移完成了")  # one shared 3-character word = two bigrams
    assert found == Match("P2", 0.15, ("数据", "据库"))


def test_p2_needs_two_shared_words_and_skips_stop_words() -> None:
    found = match("the weather is bad", "weather report")  # one shared word: not P2
    assert found is not None and found.level == "P3"
    assert features("this is what they have been working on with the").words == ("work",)
    assert features("我们的是").words == ()  # made only of function characters


def test_p3_strong_and_partial() -> None:
    found = match("reconfiguration", "configurations")
    assert found is not None and found.level == "P3" and found.delta == 0.15
    assert found.evidence[0] == "overlap=0.917" and "fig" in found.evidence
    assert match("我在家", "他在家") == Match("P3", 0.15, ("overlap=1.000", "在家"))
    partial = match("我今天很开心", "我们今天去公园")  # 今天 of 5 bigrams
    assert partial == Match("P3_partial", 0.0, ("overlap=0.200", "今天"))


def test_overlap_coefficient() -> None:
    assert overlap_coefficient("abcd", "abce") == pytest.approx(1 / 2)  # {abc,bcd} vs {abc,bce}
    assert overlap_coefficient("数据库", "数据") == 1.0  # the smaller set is inside the larger
    assert overlap_coefficient("数据库迁移", "数据") == 1.0
    assert overlap_coefficient("  Hello,\tWORLD ", "hello world") == 1.0  # case and spacing
    assert overlap_coefficient("on the", "the on") == 1.0  # no gram at all: character sets compared
    assert overlap_coefficient("on the", "on a") == pytest.approx(2 / 3)  # {o,n} of {o,n,a}
    assert overlap_coefficient("AI is here", "ask AI") == 0.0  # words under 3 letters give no gram
    assert overlap_coefficient("", "anything") == 0.0
    assert overlap_coefficient("abc", "") == 0.0
    assert overlap_coefficient("the cat sat on the mat", "nginx listens on port 8080") == 0.0


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("the cat sat on the mat", "nginx listens on port 8080"),
        ("he bought a bicycle", "she sold her bike"),
        ("喜欢猫", "讨厌猫和狗"),
        ("电脑坏了需要修理", "修好了自行车"),
        ("Remember to water the plants", "ComfyUI 端口: 8188"),
        ("", ""),
        ("   ", "\n"),
    ],
)
def test_unrelated_texts_do_not_match(new: str, old: str) -> None:
    assert match(new, old) is None


@pytest.mark.parametrize(
    "text",
    ["ComfyUI 端口: 8188", "user prefers dark mode", "用户喜欢深色主题", "ok", "the the", "配置", "猫", "!!!", "a"],
)
def test_identical_texts_always_match(text: str) -> None:
    found = match(text, text)
    assert found is not None and found.level in {"P1", "P2", "P3"} and found.delta == 0.15


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=120).filter(lambda t: not t.isspace()))
def test_identical_non_blank_texts_never_give_none(text: str) -> None:
    assert match(text, text) is not None


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=80), st.text(max_size=80))
def test_deterministic_and_well_formed(a: str, b: str) -> None:
    first = match(a, b)
    assert first == match(a, b) == match_features(features(a), features(b))
    assert 0.0 <= overlap_coefficient(a, b) <= 1.0
    if first is not None:
        assert first.level in {"P1", "P2", "P3", "P3_partial"}
        assert first.delta == (0.0 if first.level == "P3_partial" else 0.15)
        assert first.evidence


def test_level_order_p1_before_p2_before_p3() -> None:
    # shares an entity *and* words: P1 wins
    found = match("Redis crashed at midnight again", "Redis crashed at midnight")
    assert found is not None and found.level == "P1"
    # shares words but no entity: P2 wins over a high overlap
    found = match("backup crashed at midnight", "the backup crashed at midnight")
    assert found is not None and found.level == "P2"


def test_bump_caps_confidence() -> None:
    assert bump(0.5, vm.P1_DELTA) == pytest.approx(0.65)
    assert bump(0.95, vm.P2_DELTA) == 1.0
    assert bump(1.0, vm.P3_ACCUMULATED_DELTA) == 1.0


def test_match_is_frozen() -> None:
    found = match("port 8080", "port 8080")
    assert found is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.delta = 1.0  # type: ignore[misc]


def test_megabyte_texts_are_bounded() -> None:
    big = "nginx 配置在 /etc/nginx/nginx.conf，端口 8080。" * 30_000
    assert len(big) > 1_000_000
    start = time.perf_counter()
    found = match(big, big + " tail")
    assert time.perf_counter() - start < 2.0
    assert found is not None and found.level == "P1"
