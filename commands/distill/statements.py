"""An episode's turns read as statements: each sentence with what marks it memorable or chatter.

A user sentence is informative when its cues add up (`USER_THRESHOLD`): a preference, decision or
constraint cue, talk about the speaker's own world, numbers, identifiers (versions, paths, hosts,
CamelCase and ALL-CAPS names), proper names, fact verbs, corrections; hedges count against. An
explicit "remember this" is always informative. Questions, pleasantries, offers and transient
remarks never are. An assistant sentence counts only when it reports something found or settled
(a report cue) about a concrete thing (a number, identifier or name): assistants explain a lot that
is not the user's world. Tool and system turns are raw material, never memories themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Final, Sequence

from commands.distill import cues
from commands.distill.sentences import is_chinese, split_sentences, words

USER_THRESHOLD: Final = 0.8
ASSISTANT_THRESHOLD: Final = 1.2
TASK_ASSISTANT_THRESHOLD: Final = 0.8  # a task's summary is what the task found
MIN_CONTENT_WORDS: Final = 3          # fewer, and no figure or identifier: too little to be a memory
_NUMBER: Final = re.compile(r"\d")
_FIGURES: Final = re.compile(r"\d+(?:[.:]\d+)*")
_IDENTIFIER: Final = re.compile(
    r"\d+\.\d+\.\d+|[A-Za-z]+\d|\d+[A-Za-z]|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z]+[A-Z]\w*|\b[A-Z]{2,}\b|\b[\w-]+\.(?:[a-z]{2,5})\b|"
    r"/[\w.@-]+|\b\w+_\w+|https?://|\w@\w|\b[\w-]+:\d+")
_PROPER: Final = re.compile(r"(?<=[\w,;:)\]] )[A-Z][a-z]{2,}")
_LEADING_FILLER: Final = re.compile(
    r"^\s*(?:(?:ok(?:ay)?|so|well|btw|by the way|also|and|oh|ah|yeah|yes|right|alright|anyway|hey|hi|hmm|"
    r"great|cool|thanks|thank you|thx|ty|sure|got it|one more thing|fyi|lol|haha|meh|wait)\b[\s,.!:;—-]*)+"
    r"|^\s*(?:(?:好的|好|嗯嗯?|哦|对了|另外|还有|顺便说一下|顺便|其实|那个|然后|哈哈+|谢谢)[，,。!！\s]*)+",
    re.IGNORECASE)
CATEGORY_ORDER: Final = ("decision", "constraint", "preference", "fact")
WEIGHTS: Final = {"cue": 1.0, "self": 0.5, "fact_verb": 0.3, "number": 0.6, "figures": 0.2, "naming": 0.5,
                  "time": 0.3, "identifier": 0.6, "proper": 0.3, "correction": 0.3, "hedge": -0.6}


@dataclass(frozen=True, slots=True)
class Statement:
    turn: int                  # index of the turn it comes from
    role: str
    text: str                  # the sentence, cleaned (leading fillers and "remember this:" removed)
    score: float
    category: str              # fact | preference | decision | constraint
    informative: bool
    remember: bool = False
    question: bool = False
    pleasantry: bool = False
    content_words: int = 0     # words left once pleasantries, fillers and stop words are removed
    transient: bool = False    # about the moment ("brb", "tonight I'll...")
    hedged: bool = False       # undecided or venting ("maybe", "纠结", "ugh")
    request: bool = False      # a request for the task at hand ("can you list ...", "帮我看看")
    judged: float | None = None  # the learned judge's probability that it is memorable (None: rules alone)


def _content_words(text: str) -> list[str]:
    return [w for w in words(text) if w not in cues.STOP_EN and w not in cues.STOP_ZH]


def _has(pattern_en: re.Pattern[str], pattern_zh: re.Pattern[str], text: str) -> bool:
    return bool(pattern_en.search(text) or pattern_zh.search(text))


_CJK_RANGE: Final = "\u3400-\u4dbf\u4e00-\u9fff"
# clauses end at commas, and in Chinese chat also at a space between Chinese words ("我儿子5岁 想报个班 学啥好")
_CLAUSE: Final = re.compile(rf"\s*[，,；;]\s*|(?<=[^\x00-\x7f])\s+(?=[{_CJK_RANGE}])")


def _asks_zh(text: str) -> bool:
    return bool(cues.QUESTION_WORD_ZH.search(cues.NOT_ASKING_ZH.sub("", text)))


def _asks(clause: str, zh: bool) -> bool:
    if zh:
        return _asks_zh(clause) or bool(cues.QUESTION_END.search(clause))
    return bool(cues.QUESTION_END.search(clause) or cues.QUESTION_START_EN.match(clause)
                or cues.QUESTION_CLAUSE_EN.match(clause) or cues.TRAILING_ASK_EN.match(clause))


def _without_clauses(text: str, zh: bool, drop: Callable[[str], bool]) -> str:
    """`text` without the clauses `drop` picks (its closing full stop kept); unchanged when it picks
    none or all of them."""
    clauses = [c for c in _CLAUSE.split(text) if c]
    kept = [c for c in clauses if not drop(c)]
    if not kept or len(kept) == len(clauses):
        return text
    out = ("，" if zh else ", ").join(kept).strip()
    end = text.rstrip()[-1]
    return out + end if end in "。！.!" and out[-1] not in "。！？.!?" else out


def _without_question_clauses(text: str, zh: bool) -> str:
    """A sentence that states something and asks ("现在68kg，目标60kg，有啥建议", "个税怎么填啊，我在
    深圳上班", "smb from my macbook is slow, any idea why?"): the statement without the question.
    English sentences that end with a full stop or open with a question are left alone (a
    question's own clauses: "how do I X, given Y?")."""
    if not zh and (text.rstrip().endswith((".", "!")) or _asks(_CLAUSE.split(text)[0], zh)):
        return text
    return _without_clauses(text, zh, lambda clause: _asks(clause, zh))


def _hedged(text: str) -> bool:
    return _has(cues.HEDGE_EN, cues.HEDGE_ZH, text) or bool(cues.PROBLEM.search(text))


def _passing(clause: str) -> bool:
    return _hedged(clause) or _has(cues.TRANSIENT_EN, cues.TRANSIENT_ZH, clause) or bool(cues.SOON_EN.search(clause))


def _without_passing_clauses(text: str, zh: bool) -> str:
    """A statement with a hedge, a complaint or a remark about the moment in one of its clauses ("我住
    回龙观，每天通勤一个半小时，累死了", "i'm type 1, eating out tonight"): the other clauses, which
    still state something."""
    return _without_clauses(text, zh, _passing)


def _is_question(text: str, zh: bool) -> bool:
    """Ends as a question, or (English) asks one without the mark: a question word at the start or at
    the start of a later clause. Chinese chat drops final punctuation too often to guess."""
    if cues.QUESTION_END.search(text):
        return True
    if zh:
        return _asks_zh(text)
    if text.rstrip().endswith((".", "!")):
        return False
    return bool(cues.QUESTION_START_EN.match(text) or cues.QUESTION_CLAUSE_EN.search(text))


def _names_content(sentence: str) -> bool:
    """A "remember" sentence says what to remember: something is left once the remember phrases,
    pointing words ("this", "到时候") and pleasantries are taken out."""
    rest = cues.REMEMBER_EN.sub(" ", cues.REMEMBER_ZH.sub(" ", sentence))
    rest = cues.REMEMBER_DEICTIC.sub(" ", rest)
    return _beyond_pleasantries(rest) >= 2 or bool(_NUMBER.search(rest) or _IDENTIFIER.search(rest))


def _beyond_pleasantries(text: str) -> int:
    """How many content words are left once pleasantries, fillers and stop words are removed."""
    return len(_content_words(cues.PLEASANTRY_ZH.sub(" ", cues.PLEASANTRY_EN.sub(" ", text))))


def _is_pleasantry(text: str, beyond: int, zh: bool) -> bool:
    """Nothing but pleasantries and fillers: fewer than two content words beyond them (three CJK
    characters: a Chinese word is mostly two), and no number or identifier (a bare "pve3." or "8189"
    answers something)."""
    return beyond < (3 if zh else 2) and not (_NUMBER.search(text) or _IDENTIFIER.search(text))


def category_of(text: str, role: str = "user") -> str:
    if _has(cues.DECISION_EN, cues.DECISION_ZH, text):
        return "decision"
    if _has(cues.PREFERENCE_EN, cues.PREFERENCE_ZH, text) or (
            role == "user" and (cues.INSTRUCTION_EN.match(text) or cues.INSTRUCTION_ZH.search(text))):
        return "preference"
    if _has(cues.CONSTRAINT_EN, cues.CONSTRAINT_ZH, text):
        return "constraint"
    return "fact"


def signals(text: str, category: str, hedged: bool) -> dict[str, float]:
    """What speaks for a sentence being memorable (and, `hedge`, against), each 0 or 1."""
    return {
        "cue": float(category != "fact"),                    # a preference, decision or constraint cue
        "self": float(_has(cues.SELF_EN, cues.SELF_ZH, text)),
        "fact_verb": float(_has(cues.FACT_EN, cues.FACT_ZH, text)),
        "number": float(bool(_NUMBER.search(text))),
        "figures": float(len(set(_FIGURES.findall(text))) >= 2),
        "naming": float(_has(cues.NAMING_EN, cues.NAMING_ZH, text)),
        "time": float(_has(cues.TIME_EN, cues.TIME_ZH, text)),
        "identifier": float(bool(_IDENTIFIER.search(text))),
        "proper": float(bool(_PROPER.search(text))),
        "correction": float(_has(cues.CORRECTION_EN, cues.CORRECTION_ZH, text)),
        "hedge": float(hedged),
    }


def read_statement(sentence: str, role: str, turn: int, kind: str = "conversation") -> Statement:
    zh = is_chinese(sentence)
    remember_talk = _has(cues.REMEMBER_EN, cues.REMEMBER_ZH, sentence) and role == "user"
    remember = remember_talk and _names_content(sentence)
    text = cues.REMEMBER_PREFIX.sub("", sentence) if remember else sentence
    text = _LEADING_FILLER.sub("", text).strip() or text.strip()
    text = _without_question_clauses(text, zh)
    if role == "user":
        text = _without_passing_clauses(text, zh)
    question = _is_question(text, zh)
    beyond = _beyond_pleasantries(text)
    pleasantry = _is_pleasantry(text, beyond, zh) or (remember_talk and not remember)  # "别让我忘了" says nothing
    transient = _has(cues.TRANSIENT_EN, cues.TRANSIENT_ZH, text) or bool(cues.SOON_EN.search(text))
    request = role == "user" and bool(cues.REQUEST_EN.match(text) or cues.REQUEST_ZH.match(text))
    category = category_of(text, role)
    hedged = _hedged(text)
    score = sum(WEIGHTS[name] * value for name, value in signals(text, category, hedged).items())
    substantial = len(_content_words(text)) >= MIN_CONTENT_WORDS or bool(_NUMBER.search(text) or _IDENTIFIER.search(text))
    if role == "user":
        informative = (remember and not pleasantry and not question) or (substantial and
            score >= USER_THRESHOLD and not question and not pleasantry and not transient
            and (not request or _has(cues.STANDING_EN, cues.STANDING_ZH, text)))
    elif role == "assistant":
        concrete = bool(_NUMBER.search(text) or _IDENTIFIER.search(text) or _PROPER.search(text))
        reports = _has(cues.REPORT_EN, cues.REPORT_ZH, text) or kind == "task"   # a task's summary is a report
        threshold = TASK_ASSISTANT_THRESHOLD if kind == "task" else ASSISTANT_THRESHOLD
        informative = (concrete and reports and score >= threshold
                       and not question and not pleasantry and not transient
                       and not (cues.OFFER_EN.match(text) or cues.OFFER_ZH.search(text))
                       and not (cues.ADVICE_EN.match(text) or cues.ADVICE_ZH.match(text))
                       and not (cues.INTENT_EN.search(text) or cues.INTENT_ZH.match(text)))
    else:
        informative = False
    return Statement(turn, role, text, round(score, 3), category, informative, remember, question, pleasantry,
                     beyond, transient, hedged, request)


def read_statements(turns: Sequence[dict[str, Any]], kind: str = "conversation") -> list[Statement]:
    """Every sentence of every turn, read (`read_statement`)."""
    return [read_statement(s, t["role"], i, kind) for i, t in enumerate(turns) for s in split_sentences(t["content"])]
