"""Entity extraction: every kind in English, Chinese and mixed text; negatives; order; bounds."""

from __future__ import annotations

import dataclasses
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.text.entities import MAX_CHARS, MAX_ENTITIES, Entity, cjk_pieces, entity_keys, extract


def kinds(text: str, kind: str) -> list[str]:
    """The norms of ``kind`` entities in ``text``, in order."""
    return [e.norm for e in extract(text) if e.kind == kind]


def test_mixed_chinese_english_examples() -> None:
    assert extract("ComfyUI 端口: 8188") == [
        Entity("name", "ComfyUI", "comfyui"), Entity("term", "端口", "端口"), Entity("port", "8188", "8188"),
    ]
    assert extract("nginx 配置在 /etc/nginx/nginx.conf") == [
        Entity("term", "配置", "配置"), Entity("path", "/etc/nginx/nginx.conf", "/etc/nginx/nginx.conf"),
    ]
    # no spaces around the path, full-width colon, CJK right after an identifier
    assert kinds("配置在/etc/nginx/nginx.conf中", "path") == ["/etc/nginx/nginx.conf"]
    assert kinds("ComfyUI 端口：8188", "port") == ["8188"]
    assert kinds("设置REDIS_URL环境变量", "identifier") == ["redis_url"]


def test_urls_keep_their_path_and_strip_trailing_punctuation() -> None:
    text = "See https://Example.com:8443/docs/api?x=1, and www.python.org."
    assert kinds(text, "url") == ["https://example.com:8443/docs/api?x=1", "www.python.org"]
    assert kinds(text, "port") == ["8443"]
    assert kinds("文档在https://a.com/x里", "url") == ["https://a.com/x"]
    assert kinds(text, "path") == [] and kinds(text, "identifier") == []  # the url claims its span


def test_ipv4_with_optional_port() -> None:
    text = "Redis at 192.168.1.10:6379, backup 10.0.0.1 and 10.0.0.1:80."
    assert kinds(text, "ip") == ["192.168.1.10", "10.0.0.1"]  # norm is the bare address
    assert [e.value for e in extract(text) if e.kind == "ip"] == ["192.168.1.10:6379", "10.0.0.1"]
    assert kinds(text, "port") == ["6379", "80"]
    assert kinds("服务器地址192.168.1.1，监听8080", "ip") == ["192.168.1.1"]
    assert kinds("999.1.1.1 and 1.2.3.4.5", "ip") == []


@pytest.mark.parametrize(
    ("text", "port"),
    [
        ("nginx listens on 8080", "8080"),
        ("the app is listening on :3000", "3000"),
        ("open port 443 in the firewall", "443"),
        ("Port: 22", "22"),
        ("端口 8188", "8188"),
        ("端口: 8188", "8188"),
        ("端口号为8188", "8188"),
        ("请开放8080端口", "8080"),
        ("服务监听 9000", "9000"),
        ("curl localhost:8443", "8443"),
        ("connect to db.internal:05432", "5432"),
    ],
)
def test_port_forms(text: str, port: str) -> None:
    assert kinds(text, "port") == [port]


def test_invalid_ports_are_not_ports() -> None:
    assert kinds("port 99999 and port 0", "port") == []


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("edit /etc/nginx/nginx.conf now", "/etc/nginx/nginx.conf"),
        ("notes live in ~/notes/todo.md.", "~/notes/todo.md"),
        ("run ./scripts/run.sh", "./scripts/run.sh"),
        ("see ../docs/", "../docs"),
        (r"saved to C:\Users\me\app.ini", r"c:\users\me\app.ini"),
        ("change src/app/main.py", "src/app/main.py"),
        ("日志在/var/log/zhiyi.log里", "/var/log/zhiyi.log"),
    ],
)
def test_path_forms(text: str, path: str) -> None:
    assert kinds(text, "path") == [path]


def test_slashes_that_are_not_paths() -> None:
    assert kinds("and/or TCP/IP w/o 1/2 cup 2024/01/15", "path") == []


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("upgrade to v1.2.3", "1.2.3"),
        ("Python 3.11 is required", "3.11"),
        ("python 3.12 works too", "3.12"),
        ("Redis 7.2.4 released", "7.2.4"),
        ("try 2.0.0-rc.1+build.5", "2.0.0-rc.1+build.5"),
        ("版本 2.0 已发布", "2.0"),
        ("用的是Redis 7.2版本", "7.2"),
        ("Node.js 18.4 on V2", "18.4"),
    ],
)
def test_version_forms(text: str, version: str) -> None:
    assert kinds(text, "version")[0] == version


def test_times_dates_and_quantities_are_not_versions() -> None:
    for text in (
        "Meeting at 03:00 and 10:30am",
        "on 2024-01-15, 2024/01/15, 2024.01.15 and 2024年1月15日",
        "2024-01-15T10:30:00Z",
        "it took 2.5 hours and 12.5% of 3.5 GB",
        "the score was 3.5 and the threshold is 0.25",
        "about 1.5 weeks",
    ):
        assert [e for e in extract(text) if e.kind in {"version", "port", "path", "ip"}] == [], text
    assert extract("03:00") == [] and extract("2024-01-15") == [] and extract("2024.01.15") == []


@pytest.mark.parametrize(
    ("text", "identifier"),
    [
        ("set REDIS_URL first", "redis_url"),
        ("call snake_case_name()", "snake_case_name"),
        ("import os.path.join", "os.path.join"),
        ("use docker-compose up", "docker-compose"),
        ("model gpt-4o", "gpt-4o"),
        ("the getUserName helper", "getusername"),
        ("runs on an H200", "h200"),
        ("run `pip install lancedb` once", "pip install lancedb"),
        ("the `my_func` helper", "my_func"),
        ("edit config.yaml", "config.yaml"),
    ],
)
def test_identifier_forms(text: str, identifier: str) -> None:
    assert kinds(text, "identifier") == [identifier]


def test_backticked_structured_code_keeps_its_kind() -> None:
    assert kinds("see `/etc/hosts` and `https://a.com/x`", "path") == ["/etc/hosts"]
    assert kinds("see `/etc/hosts` and `https://a.com/x`", "url") == ["https://a.com/x"]
    assert kinds("run `curl localhost:8080`", "port") == ["8080"]  # spaced code stays open inside


def test_abbreviations_and_plain_words_are_not_entities() -> None:
    assert kinds("e.g. this, i.e. that", "identifier") == []
    assert extract("the cat sat on the mat and we went home") == []


def test_names() -> None:
    text = "Yesterday I went to New York with Alice. Redis is fast. Finally it worked. LanceDB and GPU."
    assert kinds(text, "name") == ["new york", "alice", "redis", "lancedb", "gpu"]
    assert kinds("We moved to San Francisco", "name") == ["san francisco"]
    assert kinds("The Redis server restarted", "name") == ["redis"]  # leading stop word trimmed
    assert kinds("Please restart. New features. Thanks!", "name") == []
    assert kinds("用的是Redis和LanceDB", "name") == ["redis", "lancedb"]


def test_chinese_terms_split_on_function_characters() -> None:
    text = "我们把数据库的连接池配置为20，并且向量索引都在线。对象存储很重要"
    assert kinds(text, "term") == ["数据库", "连接池配置", "向量索引", "在线", "对象存储", "重要"]
    assert kinds("在北京和上海", "term") == ["北京", "上海"]
    assert kinds("我的猫", "term") == []  # single characters are not terms
    assert kinds("一二三四五六七八九", "term") == []  # longer than 8 characters


def test_quoted_terms() -> None:
    text = "需要「向量索引」和《三体》，以及“热备”方案与“Redis”"
    assert kinds(text, "term")[:4] == ["向量索引", "三体", "热备", "方案"]
    assert "redis" in kinds(text, "term")


def test_cjk_pieces() -> None:
    assert cjk_pieces("我们的数据库都在线，并发很高。") == ["数据库", "在线", "并发"]
    assert cjk_pieces("数据库在线") == ["数据库在线"]  # a protected word does not split


def test_dedup_by_kind_and_norm_keeps_first_appearance_order() -> None:
    text = "Redis on port 6379. REDIS again, redis port 6379, Redis at /srv/redis/ and /srv/redis"
    found = extract(text)
    assert [(e.kind, e.value) for e in found] == [("name", "Redis"), ("port", "6379"), ("path", "/srv/redis/")]
    assert len({(e.kind, e.norm) for e in found}) == len(found)


def test_entity_keys_and_frozen_entity() -> None:
    assert entity_keys("ComfyUI 端口: 8188") == frozenset({"name:comfyui", "term:端口", "port:8188"})
    assert entity_keys("") == frozenset()
    entity = extract("port 8080")[0]
    assert entity.key == "port:8080"
    with pytest.raises(dataclasses.FrozenInstanceError):
        entity.norm = "x"  # type: ignore[misc]


def test_bounds_on_a_megabyte() -> None:
    big = "ComfyUI 端口: 8188, nginx 配置在 /etc/nginx/nginx.conf, Python 3.11. " * 16_000
    assert len(big) > 1_000_000
    start = time.perf_counter()
    found = extract(big)
    assert time.perf_counter() - start < 2.0
    assert 0 < len(found) <= MAX_ENTITIES
    many = " ".join(f"port {p}" for p in range(1000, 3000))  # 2000 distinct ports in 20 000 chars
    assert len(extract(many)) == MAX_ENTITIES
    assert extract("x" * MAX_CHARS + " port 8080") == []  # beyond the window


@pytest.mark.parametrize("unit", ["a-", "a.", "a:1", "a/", "1.", "Aa ", "`a", "a_", "的中", "-a.b:", "~/a "])
def test_pathological_repetition_stays_fast(unit: str) -> None:
    start = time.perf_counter()
    extract(unit * (MAX_CHARS // len(unit)))
    assert time.perf_counter() - start < 1.0


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aZ1.:/-_ `~\\端口的数据库「」8v@\n")), max_size=80))
def test_deterministic_unique_and_capped(text: str) -> None:
    first = extract(text)
    assert first == extract(text)
    assert len({(e.kind, e.norm) for e in first}) == len(first) <= MAX_ENTITIES
    assert all(e.norm for e in first)


# ------------------------------------------------------------------ the scans' shortcuts are exact


def _strings(seed: int, alphabet: str, n: int, longest: int) -> list[str]:
    import random

    rng = random.Random(seed)
    return ["".join(rng.choices(alphabet, k=rng.randint(1, longest))) for _ in range(n)]


def test_identifiers_are_found_exactly_as_the_whole_text_scan_finds_them() -> None:
    """`_identifiers` skips runs that cannot hold an identifier: the same matches as `_IDENT.finditer`."""
    from projections.text.entities import _IDENT, _identifiers

    texts = _strings(1, "abzAZ019_.-  中é/:`", 20_000, 40) + [
        "use os.path.join and REDIS_URL with docker-compose on macOS", "getUser H200 py3 e.g. x.y", "McDonald iPhone"]
    for text in texts:
        assert [m.span() for m in _identifiers(text)] == [m.span() for m in _IDENT.finditer(text)], text


def test_han_runs_split_exactly_as_the_alternatives_alone_split_them() -> None:
    """The lookahead in front of `_ZH_SPLIT` changes no match, only how fast the others fail."""
    import re

    from projections.text.entities import _PROTECTED, _ZH_SPLIT, _ZH_SPLIT_ALTERNATIVES, FUNCTION_CHARS, FUNCTION_WORDS

    plain = re.compile(_ZH_SPLIT_ALTERNATIVES)
    alphabet = "".join(chr(c) for c in range(0x4e00, 0x4e00 + 200)) + "".join(FUNCTION_CHARS) * 3 + \
        "".join(_PROTECTED) + "".join(FUNCTION_WORDS) + "ab 1"
    for run in _strings(2, alphabet, 20_000, 30):
        assert [(m.span(), m.group(1)) for m in _ZH_SPLIT.finditer(run)] == \
            [(m.span(), m.group(1)) for m in plain.finditer(run)], run


def test_port_patterns_skipped_for_want_of_their_word_never_match() -> None:
    """An ASCII text lacking every word of `_PORT_WORDS[pattern]` (lower-cased) has no match of it."""
    from projections.text.entities import _PORT_WORDS

    words = ["port ", "Ports", "PORT#", "listens on ", "Binding ", "bound to ", "serves at ", "LISTEN ", "number "]
    import random

    rng = random.Random(3)
    texts = ["".join(rng.choice(words + ["8080", ":", " ", "x", "9", "="]) for _ in range(rng.randint(1, 8)))
             for _ in range(20_000)]
    checked = 0
    for text in texts:
        for pattern, needed in _PORT_WORDS.items():
            if pattern.search(text):
                checked += 1
                assert any(w in text.lower() for w in needed), (text, pattern.pattern)
    assert checked > 1000
    assert extract("Port 8080 and the service listens on 9090") == [
        Entity("port", "8080", "8080"), Entity("port", "9090", "9090")]


def test_names_are_the_runs_a_visit_of_every_word_finds() -> None:
    """`_names` visits only capitalised words: the same names, in the same order, as the loop over every
    word it replaced (kept here as the reference)."""
    import re

    from projections.text import entities as ent

    def every_word(c: ent._Collector, text: str) -> None:
        def flush(run: list[re.Match[str]]) -> None:
            lo, hi = 0, len(run)
            while lo < hi and run[lo].group().lower() in ent._STOP_NAMES:
                lo += 1
            while hi > lo and run[hi - 1].group().lower() in ent._STOP_NAMES:
                hi -= 1
            if lo == hi or (hi - lo == 1 and run[lo].group().lower() in ent._LONE_STOP):
                return
            first = run[lo]
            if hi - lo == 1 and ent._sentence_start(text, first.start()) and first.group()[1:].islower() \
                    and first.group().endswith(("ly", "ing", "ed")):
                return
            value = text[first.start():run[hi - 1].end()]
            c.add(first.start(), "name", value, value.lower())

        run: list[re.Match[str]] = []
        for w in ent._WORD.finditer(text):
            word = w.group()
            if len(word) >= 2 and word[0].isupper() and word.isalpha() and c.free(w.start(), w.end()):
                if run and text[run[-1].end():w.start()] != " ":
                    flush(run)
                    run = []
                run.append(w)
            elif run:
                flush(run)
                run = []
        if run:
            flush(run)

    texts = _strings(4, "Ab Cd eF GH ij Kl2 M. New York The-Foo  x,", 20_000, 60) + [
        "Alice met Bob Smith in New York. Finally, The Quick Brown Fox went to ComfyUI and LanceDB",
        "Please Copy The File to GPU Server Alpha", "McDonald's iPhone NASA A B Cc Dd"]
    named = 0
    for text in texts:
        got, want = ent._Collector(text), ent._Collector(text)
        for c in (got, want):   # a claimed span, as earlier kinds leave them
            c.claimed[len(text) // 3:len(text) // 2] = b"\x01" * (len(text) // 2 - len(text) // 3)
        ent._names(got, text)
        every_word(want, text)
        assert got.found == want.found, text
        named += len(got.found)
    assert named > 10_000
