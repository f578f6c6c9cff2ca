"""What a memory's text says beyond its topic, for comparing two memories (seed 3.3.2, 6.2).

Pure and deterministic (no clock, no model): the values a text gives (numbers, times, versions,
amounts), whether it denies something (English- and Chinese-aware negation), and whether it says it
updates an earlier fact ("now", "changed to", "no longer", "现在", "改为", "不再"...).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final

from commands.reactions.validation_match import Features, features

_NUMBER: Final = re.compile(r"\d+(?:[.,:]\d+)*")
#: Chinese digits (and 两/半) as values, so "四点" and "4 点" compare.
_ZH_DIGITS: Final = dict(zip("零〇一二两三四五六七八九十", [0, 0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10]))
_ZH_NUMBER: Final = re.compile(r"[零〇一二两三四五六七八九十]+(?=[点个台块元岁次号月日天周年人只条层分秒度寸米斤页])")
_EN_NUMBER_WORDS: Final = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                           "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20, "thirty": 30,
                           "hundred": 100}
_EN_WORD: Final = re.compile(r"[a-z]+(?:'[a-z]+)?")

_EN_NEGATIONS: Final = frozenset("""
    not no never none nobody nothing neither nor without cannot can't don't doesn't didn't isn't aren't wasn't
    weren't won't wouldn't shouldn't hasn't haven't hadn't couldn't mustn't dont doesnt didnt isnt arent wont
    cant hasnt havent nowhere
""".split())
_ZH_NEGATIONS: Final = ("不", "没", "沒", "无", "無", "未", "别", "別", "勿", "非", "禁止", "否")
#: Chinese words that hold a negation character but deny nothing.
_ZH_NOT_NEGATION: Final = ("不错", "不少", "不久", "不过", "不断", "不同", "不一定", "无论", "非常", "并非不",
                           "差不多", "不仅", "要不", "不然", "未来", "别的", "别人", "别墅", "无线", "无人机",
                           "没错", "不管", "不定期", "否则", "是否", "能否", "可否")
#: Words that say a statement updates an earlier one (seed: "now", "changed to", "不再", "改为"). Only
#: explicit ones: "from", "new", "recently" or "已经" start too many sentences that update nothing.
_EN_CUES: Final = (
    "now", "changed to", "change to", "switched to", "switch to", "moved to", "no longer", "not anymore",
    "anymore", "any more", "as of", "updated to", "upgraded to", "replaced", "instead of", "from now on",
    "these days", "nowadays", "currently", "has since", "migrated to", "was changed", "has changed",
)
_ZH_CUES: Final = ("现在", "改为", "改成", "改到", "换成", "换了", "换到", "不再", "已经换", "搬到", "搬去", "已改",
                   "更新为", "更新到", "升级到", "升级为", "升到", "变成", "变为", "目前", "如今", "调整为", "调整到",
                   "调到", "迁移到", "迁到", "从今", "改用", "不用了", "停用")


@dataclass(frozen=True, slots=True)
class Signals:
    """One text's signals: its features for overlap (`validation_match`), its values, negation, cue,
    and its subject (what the statement is about: the words before its first verb)."""

    features: Features
    values: frozenset[str]
    negations: int
    cue: bool
    words: frozenset[str]
    subject: frozenset[str] = frozenset()


#: Where an English statement's subject ends: the first of these words (a verb, a preposition).
_EN_SUBJECT_END: Final = frozenset("""
    is are was were be been has have had does do did can can't cannot will won't should must may might uses
    use used runs run prefers prefer likes like loves love hates hate lives live works work goes go gets get
    takes take wants want needs need keeps keep stores store listens listen sits sit lands land starts start
    on in at for to from with by of via since every never always usually only also still now no not doesn't
    don't isn't aren't wasn't wears wear drinks drink eats eat speaks speak plays play owns own costs cost
""".split())
#: Where a Chinese statement's subject ends: the first of these (a verb, a copula, a time word).
_ZH_SUBJECT_END: Final = re.compile(r"的|是|在|用|有|喜欢|爱|不|没|每|要|会|吃|住|叫|从|去|为|把|被|跟|已|现在|一直|平时|最|很|比较|目前|今年|明年|去年|装|跑|买|换|改")
_EN_DROP: Final = frozenset("the a an user user's users my our their his her its this that these those".split())


def subject_of(norm: str) -> frozenset[str]:
    """The words (English) or characters (Chinese) before the statement's first verb-like word."""
    head = re.split(r"[:：,，;；.。!?！？(（]", norm, maxsplit=1)[0]
    cjk = re.search(r"[一-鿿]", head)
    if cjk and cjk.start() < 3:
        m = _ZH_SUBJECT_END.search(head, 1)
        piece = head[: m.start()] if m else head[:6]
        return frozenset(c for c in piece if not c.isspace())
    out = []
    for word in re.findall(r"[a-z0-9][a-z0-9'+.-]*|[一-鿿]+", head):
        if word in _EN_SUBJECT_END:
            break
        if word not in _EN_DROP:
            out.append(word.removesuffix("'s"))
    return frozenset(out[:6])


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def values_of(norm: str) -> frozenset[str]:
    """Numbers, times and amounts, normalised ("8,188" = "8188"; "4 点" = "四点" = "4")."""
    found = {m.group().replace(",", "") for m in _NUMBER.finditer(norm)}
    for m in _ZH_NUMBER.finditer(norm):
        digits = m.group()
        if len(digits) == 1:
            found.add(str(_ZH_DIGITS[digits]))
        elif len(digits) == 2 and digits[0] == "十":
            found.add(str(10 + _ZH_DIGITS[digits[1]]))
        elif len(digits) == 2 and digits[1] == "十":
            found.add(str(_ZH_DIGITS[digits[0]] * 10))
    found.update(str(_EN_NUMBER_WORDS[w]) for w in _EN_WORD.findall(norm) if w in _EN_NUMBER_WORDS)
    return frozenset(v.rstrip(".:") for v in found if v.rstrip(".:"))


def negations_of(norm: str) -> int:
    """How many negations the text holds (English words, Chinese characters outside fixed words)."""
    english = sum(1 for w in _EN_WORD.findall(norm) if w in _EN_NEGATIONS or w.endswith("n't"))
    zh = norm
    for word in _ZH_NOT_NEGATION:
        zh = zh.replace(word, " ")
    chinese = sum(zh.count(n) for n in _ZH_NEGATIONS)
    return english + chinese


def has_update_cue(norm: str) -> bool:
    padded = f" {re.sub(r'[^0-9a-z一-鿿]+', ' ', norm)} "
    return any(f" {cue.strip()} " in padded for cue in _EN_CUES) or any(cue in norm for cue in _ZH_CUES)


def signals(text: str) -> Signals:
    norm = _norm(text)
    feats = features(text)
    return Signals(features=feats, values=values_of(norm), negations=negations_of(norm),
                   cue=has_update_cue(norm), words=frozenset(feats.words), subject=subject_of(norm))
