"""Deterministic entity extraction from memory text (English, Chinese, mixed).

``extract(text)`` gives :class:`Entity` ``(kind, value, norm)`` in first-appearance order, unique by
``(kind, norm)``; ``norm`` is the comparison key (NFKC, lower-cased, trailing punctuation stripped).
Only the first :data:`MAX_CHARS` characters are read; at most :data:`MAX_ENTITIES` are returned.
Kinds, in priority order (a span claimed by one kind is not reused by a later one):

* backtick ``code``: url/ip/path when it is one, else ``identifier`` (the whole code);
* ``url`` (``scheme://``, ``www.``); ``ip`` (IPv4, optional ``:port``; norm is the bare address);
  a port in either is also a ``port`` entity;
* ``path``: ``/etc/x``, ``~/x``, ``./x``, ``C:\\x``, ``a/b.ext`` (ASCII segments: ``在/etc/x中``);
* ``port`` (1-65535): ``port 8080``, ``端口: 8188``, ``8188端口``, ``listens on 8080``, ``host:8443``;
* ``version``: ``v1.2.3`` (norm ``1.2.3``), ``X.Y.Z[-pre][+build]`` (not ``2024.01.15``), and a bare
  ``X.Y`` only after a version keyword or a product-like word (``Python 3.11``, ``版本 2.0``), not
  before a unit or ``%`` (``took 2.5 hours``). Times (``03:00``) and dates never match;
* ``identifier``: ``os.path`` (segments >= 2 chars: not ``e.g.``), ``snake_case``, ``REDIS_URL``,
  kebab-case with letters (``docker-compose``), lowerCamelCase (``getUser``), ``H200``/``py3``;
* ``name``: runs of Capitalised words joined by single spaces (``New York``), UpperCamelCase
  (``ComfyUI``, ``LanceDB``: product names, hence names) and acronyms (``GPU``). Stop-list words
  (``The``, ``Please``, ``Copy``...) are trimmed from both ends, ``New``/``First``... count only
  inside a run, and a lone sentence-initial ``-ly``/``-ing``/``-ed`` word is dropped (``Finally``);
* ``term``: text inside 「」『』“”《》 (<= 40 chars), and pieces of Han runs split on function
  words/characters (我们 因为 的 了 是 在...), kept at 2-8 characters; a few content words holding a
  function character (对象 并发 在线...) are not split.

Pure and deterministic: no clock, no randomness, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Final

__all__ = ["FUNCTION_CHARS", "FUNCTION_WORDS", "MAX_CHARS", "MAX_ENTITIES", "Entity", "cjk_pieces", "entity_keys",
           "extract"]

MAX_CHARS: Final = 20_000
MAX_ENTITIES: Final = 200


@dataclass(frozen=True)
class Entity:
    kind: str   # url | ip | port | path | version | identifier | name | term
    value: str  # as written (after NFKC)
    norm: str   # comparison key

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.norm}"


_L: Final = r"(?<![A-Za-z0-9_])"  # ASCII word boundaries: Han characters count as boundaries
_R: Final = r"(?![A-Za-z0-9_])"
_HAN: Final = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TRAIL: Final = ".,;:!?)]}>'\"`"
_OCTET: Final = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"

_CODE: Final = re.compile(r"`([^`\n]{1,100})`")
_URL: Final = re.compile(r"(?i)" + _L + rf"(?:(?:https?|ftp|wss?)://|www\.)[^\s<>\"'`{_HAN}。、」』》]+")
_URL_PORT: Final = re.compile(r"^(?:[a-z]+://)?[^/?#]*?:(\d{1,5})(?:[/?#]|$)", re.I)
_IP: Final = re.compile(rf"(?<![A-Za-z0-9_.]){_OCTET}(?:\.{_OCTET}){{3}}(?::(\d{{1,5}}))?(?!\.?\d)(?![A-Za-z0-9_])")
_PATH: Final = re.compile(
    r"(?<![A-Za-z0-9_:/.~\\-])(?:"
    r"[A-Za-z]:\\[A-Za-z0-9_.@+%$-]*(?:\\[A-Za-z0-9_.@+%$-]+)*\\?"  # C:\Users\me
    r"|(?:~|\.{1,2})?/[A-Za-z0-9_.@+%-]+(?:/[A-Za-z0-9_.@+%-]+)*/?"  # /etc/x, ~/x, ./x
    r"|[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\.[A-Za-z][A-Za-z0-9]{0,5}" + _R +  # src/app.py
    r")"
)
_PORTS: Final = (
    re.compile(r"(?i)" + _L + r"ports?\s*(?:number\s*)?[:=#]?\s*(\d{1,5})(?!\.?\d)"),
    re.compile(r"端口(?:号)?\s*(?:[:=为是]|设为|改为)?\s*(\d{1,5})(?!\.?\d)"),
    re.compile(r"(?<![\d.])(\d{2,5})\s*(?:号)?端口"),
    re.compile(r"(?i)" + _L + r"(?:listen(?:s|ing)?|bind(?:s|ing)?|bound|serv(?:es|ing))\s+"
               r"(?:on\s+|to\s+|at\s+)?(?:port\s+)?:?(\d{2,5})(?!\.?\d)"),
    re.compile(r"监听(?:在)?\s*:?\s*(\d{2,5})(?!\.?\d)"),
    re.compile(r"(?<![A-Za-z0-9_.-])(?:localhost|[A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*):(\d{2,5})(?![\d.:])"),
)
_VER_V: Final = re.compile(r"(?i)" + _L + r"v(\d+(?:\.\d+){0,3}(?:-[0-9a-z.]+)?(?:\+[0-9a-z.]+)?)" + _R)
_VER: Final = re.compile(
    r"(?<![A-Za-z0-9_.:/-])(\d{1,4}\.\d{1,4}((?:\.\d{1,6}){0,2})(?:-[0-9A-Za-z.]*[A-Za-z][0-9A-Za-z.]*)?"
    r"(?:\+[0-9A-Za-z.]+)?)(?![A-Za-z0-9_%]|\.\d)"
    r"(?!\s?(?:[KMGT]i?B|k?m|[kmµn]?s|secs?|seconds?|min(?:ute)?s?|h|hours?|days?|years?|x|times|"
    r"元|秒|分钟|小时|天|年|倍|个|米|公里)(?![A-Za-z]))"
)
_VER_BEFORE: Final = re.compile(r"([A-Za-z][A-Za-z0-9.+#-]*|版本号?|版|升级到|更新到)\s*[:]?\s*$")
_DATE_DOTS: Final = re.compile(r"(?:19|20)\d\d\.\d{1,2}\.\d{1,2}$")
_IDENT: Final = re.compile(
    _L + r"(?:[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+"  # os.path.join, my_mod.fn
    r"|_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*"                # snake_case, REDIS_URL
    r"|[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+"                     # docker-compose, gpt-4o
    r"|[a-z]+[A-Z][A-Za-z0-9]*"                                    # getUser, macOS
    r"|[A-Za-z]+[0-9][A-Za-z0-9]*)" + _R                           # H200, py3
)
_WORD: Final = re.compile(_L + r"[A-Za-z][A-Za-z0-9]*" + _R)
#: The words of `_WORD` that start upper-case: the only ones a name is made of.
_CAPITALISED: Final = re.compile(_L + r"[A-Z][A-Za-z0-9]*" + _R)
_QUOTED: Final = re.compile(r"「([^」]{1,40})」|『([^』]{1,40})』|“([^”]{1,40})”|《([^》]{1,40})》")
_HAN_RUN: Final = re.compile(f"[{_HAN}]+")
_DIGIT: Final = re.compile(r"\d")   # what every IP, port and version pattern needs
#: A literal the port patterns need (the others need only a digit).
_PORT_NEEDS: Final = {_PORTS[1]: "端口", _PORTS[2]: "端口", _PORTS[4]: "监听", _PORTS[5]: ":"}
#: Words one of which the case-insensitive port patterns need, looked for in an ASCII text lower-cased (in
#: other texts `(?i)` also matches a few non-ASCII letters, e.g. the dotless i: those are always scanned).
_PORT_WORDS: Final = {_PORTS[0]: ("port",), _PORTS[3]: ("listen", "bind", "bound", "serv")}
#: A maximal run of the characters an identifier is made of: every `_IDENT` match lies inside one.
_IDENT_RUN: Final = re.compile(r"[A-Za-z0-9_.-]+")
_SENTENCE_END: Final = set(".!?。！？；;:：\n-*#>•·|")

#: Chinese function words (longest first) and characters that split a Han run into terms.
FUNCTION_WORDS: Final = (
    "为什么 什么 怎么 但是 因为 所以 如果 虽然 可以 已经 现在 然后 还是 或者 以及 并且 而且 这个 那个 "
    "一个 一些 这些 那些 这里 那里 就是 不是 没有 自己 因此 只是 还有 正在 非常 需要 应该 之后 之前"
).split()
FUNCTION_CHARS: Final = frozenset(
    "的了是在和与及或把被将对从到为也都就而并等个这那我你他她它们吗呢吧啊着过很又还之其于")
_PROTECTED: Final = "对象 对比 对应 并发 并行 在线 存在 行为 等待 等级 个人 个性 将来 到期 认为".split()
_ZH_SPLIT_ALTERNATIVES: Final = \
    f"({'|'.join(_PROTECTED)})|{'|'.join(FUNCTION_WORDS)}|[{''.join(sorted(FUNCTION_CHARS))}]"
#: group 1: a protected word (kept); anything else matched splits. The lookahead (the first characters of
#: every alternative) fails most positions at once instead of trying ~55 alternatives there: 3x faster.
_ZH_SPLIT: Final = re.compile(
    f"(?=[{''.join(sorted({w[0] for w in (*_PROTECTED, *FUNCTION_WORDS)} | FUNCTION_CHARS))}])"
    f"(?:{_ZH_SPLIT_ALTERNATIVES})")

#: Capitalised words that are not names (sentence-initial words, pronouns, imperative verbs...).
_STOP_NAMES: Final = frozenset("""
    the a an this that these those it its i we you he she they me my our your his her their there here and or but so
    if then than when while where what which who whom whose why how yes no not ok okay hi hello hey thanks thank please
    note see let lets also just only still yet now today yesterday tomorrow tonight after before since until because
    although though however therefore maybe perhaps all any each every some many most more much few other another both
    either neither such same one two in on at to for from of by with about as into over under between through during
    without within is are was were be been being am do does did done have has had can could will would should shall
    might must don didn doesn isn wasn won use run set add install restart check make try start stop open close update
    remove create delete fix move change configure enable disable keep remember find get go call copy upgrade download
    deploy build test write read edit save load send ask tell show put take give turn switch pull push merge clone print
    wait avoid prefer always never sure well port ports version step steps""".split())
#: Capitalised words that are names only inside a multi-word run (``New York``, not ``New``).
_LONE_STOP: Final = frozenset("new old first second next last great good big small north south east west".split())
#: Words that, before a bare ``X.Y``, mark a quantity rather than a product's version.
_NOT_PRODUCT: Final = _STOP_NAMES | frozenset(
    "about around approximately roughly nearly almost over under only cost costs score scored rate ratio "
    "weight confidence threshold price value factor delta average avg takes took needs paid pays".split()
)


def _han_pieces(run: str) -> Iterator[tuple[int, str]]:
    """``(offset, piece)`` of a Han run split on function words/characters (protected words kept)."""
    start = 0
    for m in _ZH_SPLIT.finditer(run):
        if m.group(1) is None:  # a splitter, not a protected word
            yield start, run[start : m.start()]
            start = m.end()
    yield start, run[start:]


def cjk_pieces(text: str) -> list[str]:
    """Han runs of ``text`` split on function words/characters (pieces of any length >= 2)."""
    return [p for run in _HAN_RUN.findall(text) for _, p in _han_pieces(run) if len(p) >= 2]


def _sentence_start(text: str, start: int) -> bool:
    i = start - 1
    while i >= 0 and text[i] in " \t\"'(“‘":
        i -= 1
    return i < 0 or text[i] in _SENTENCE_END


def _valid_port(digits: str) -> str | None:
    port = int(digits)
    return str(port) if 0 < port < 65536 else None


class _Collector:
    """Entities found so far, with the character spans already claimed by a kind."""
    def __init__(self, text: str) -> None:
        self.claimed = bytearray(len(text))
        self.found: list[tuple[int, int, Entity]] = []

    def free(self, start: int, end: int) -> bool:
        return self.claimed.find(1, start, end) == -1

    def add(self, start: int, kind: str, value: str, norm: str, claim_to: int | None = None) -> None:
        if norm:
            self.found.append((start, len(self.found), Entity(kind, value, norm)))
        if claim_to is not None:
            self.claimed[start:claim_to] = b"\x01" * (claim_to - start)


def _structured(c: _Collector, value: str, start: int) -> bool:
    """Add ``value`` (at ``start``) as a url, ip or path if it is one; whether it was."""
    if _URL.fullmatch(value):
        c.add(start, "url", value, value.lower().rstrip("/"), start + len(value))
        if (m := _URL_PORT.match(value)) and (port := _valid_port(m.group(1))):
            c.add(start + m.start(1), "port", m.group(1), port)
    elif m := _IP.fullmatch(value):
        c.add(start, "ip", value, value.split(":")[0], start + len(value))
        if m.group(1) and (port := _valid_port(m.group(1))):
            c.add(start + m.start(1), "port", m.group(1), port)
    elif _PATH.fullmatch(value):
        norm = value.lower()
        c.add(start, "path", value, norm.rstrip("/\\") or norm, start + len(value))
    else:
        return False
    return True


def _version_ok(text: str, m: re.Match[str]) -> bool:
    value = m.group(1)
    if m.group(2) or "-" in value or "+" in value:  # X.Y.Z, X.Y-rc1
        return not _DATE_DOTS.match(value)
    before = _VER_BEFORE.search(text, max(0, m.start() - 40), m.start())
    return before is not None and before.group(1).lower() not in _NOT_PRODUCT


def _names(c: _Collector, text: str) -> None:
    def flush(run: list[re.Match[str]]) -> None:
        lo, hi = 0, len(run)
        while lo < hi and run[lo].group().lower() in _STOP_NAMES:
            lo += 1
        while hi > lo and run[hi - 1].group().lower() in _STOP_NAMES:
            hi -= 1
        if lo == hi or (hi - lo == 1 and run[lo].group().lower() in _LONE_STOP):
            return
        first = run[lo]
        if hi - lo == 1 and _sentence_start(text, first.start()) and first.group()[1:].islower() \
                and first.group().endswith(("ly", "ing", "ed")):
            return  # Finally, Running, Updated
        value = text[first.start() : run[hi - 1].end()]
        c.add(first.start(), "name", value, value.lower())

    # A run is words of two letters or more, capitalised, unclaimed, one space apart; any other word ends
    # it. Only capitalised words are visited: a word that is not lies in the gap to the next one, which
    # then is not a single space (a tenth of the words of prose, the same runs).
    run: list[re.Match[str]] = []
    for w in _CAPITALISED.finditer(text):
        word = w.group()
        if run and text[run[-1].end() : w.start()] != " ":
            flush(run)
            run = []
        if len(word) >= 2 and word.isalpha() and c.free(w.start(), w.end()):
            run.append(w)
        elif run:
            flush(run)
            run = []
    if run:
        flush(run)


def _identifiers(text: str) -> Iterator[re.Match[str]]:
    """`_IDENT.finditer(text)`, scanning only the runs of identifier characters that can hold a match:
    a run of ASCII letters alone holds one only when it starts lower-case and has an upper-case letter
    (lowerCamelCase), and digits alone hold none; 3x faster on prose, whose words are mostly such runs."""
    for run in _IDENT_RUN.finditer(text):
        word = run.group()
        if (word.isalpha() and (word.islower() or word[0].isupper())) or word.isdigit():
            continue
        yield from _IDENT.finditer(text, run.start(), run.end())


def _all(text: str) -> list[Entity]:
    c = _Collector(text)
    # Patterns skipped when a character every match of them needs is absent (the result is the same):
    # most texts name no url, path or port, and each pattern scans the whole text.
    digit = _DIGIT.search(text) is not None
    for m in _CODE.finditer(text) if "`" in text else ():
        inner = m.group(1).strip()
        start = m.start(1) + m.group(1).index(inner) if inner else 0
        spaced = any(ch.isspace() for ch in inner)  # a command: left open for the kinds inside it
        if inner and c.free(m.start(), m.end()) and (spaced or not _structured(c, inner, start)):
            c.add(start, "identifier", inner, inner.lower(), None if spaced else m.end())
    for pattern, possible in ((_URL, "://" in text or "www." in text.lower()), (_IP, digit and "." in text),
                              (_PATH, "/" in text or "\\" in text)):
        for m in pattern.finditer(text) if possible else ():
            value = m.group() if pattern is _IP else m.group().rstrip(_TRAIL)
            if value and c.free(m.start(), m.start() + len(value)):
                _structured(c, value, m.start())
    lower = text.lower() if digit and text.isascii() else None
    for pattern in _PORTS if digit else ():
        if (need := _PORT_NEEDS.get(pattern)) is not None and need not in text:
            continue
        if lower is not None and (words := _PORT_WORDS.get(pattern)) and not any(w in lower for w in words):
            continue
        for m in pattern.finditer(text):
            if c.free(m.start(1), m.end(1)) and (port := _valid_port(m.group(1))):
                c.add(m.start(1), "port", m.group(1), port, m.end())
    for m in chain(_VER_V.finditer(text), _VER.finditer(text)) if digit else ():
        if c.free(m.start(), m.end()) and (m.re is _VER_V or _version_ok(text, m)):
            c.add(m.start(), "version", m.group(), m.group(1).lower(), m.end())
    for m in _identifiers(text):
        value = m.group()
        if c.free(m.start(), m.end()) and min(map(len, value.split("."))) >= 2:  # not e.g.
            c.add(m.start(), "identifier", value, value.lower(), m.end())
    _names(c, text)
    for m in _QUOTED.finditer(text) if any(q in text for q in "「『“《") else ():
        inner = next(g for g in m.groups() if g is not None).strip()
        if inner:
            c.add(m.start(), "term", inner, inner.lower())
    for m in _HAN_RUN.finditer(text):
        for offset, piece in _han_pieces(m.group()):
            if 2 <= len(piece) <= 8:
                c.add(m.start() + offset, "term", piece, piece)
    return [e for _, _, e in sorted(c.found, key=lambda f: f[:2])]


def extract(text: str) -> list[Entity]:
    """Entities of ``text`` in first-appearance order, unique by ``(kind, norm)``, at most
    :data:`MAX_ENTITIES`; only the first :data:`MAX_CHARS` characters are read."""
    seen: set[tuple[str, str]] = set()
    out: list[Entity] = []
    for entity in _all(unicodedata.normalize("NFKC", text[:MAX_CHARS])):
        if (entity.kind, entity.norm) not in seen:
            seen.add((entity.kind, entity.norm))
            out.append(entity)
            if len(out) >= MAX_ENTITIES:
                break
    return out


def entity_keys(text: str) -> frozenset[str]:
    """``{"kind:norm", ...}`` for every entity of ``text``."""
    return frozenset(e.key for e in extract(text))
