"""The rule-based extractor (the embedded default, no LLM): the informative statements of an
episode (`commands.distill.statements`), one memory per turn that has any — its informative
sentences, cleaned, in order — so a fact stated across two sentences of one message stays whole.
An assistant's report that restates what the user already said in a kept turn is dropped (the
user's words are the better source). Sources follow the speaker: the user's words are
`user_chat` (seed 3.3.3), an assistant's report `agent_inference`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final, Sequence

from commands.distill import corrections, cues
from commands.distill.sentences import is_chinese, words
from commands.distill.statements import CATEGORY_ORDER, Statement

EXTRACTOR: Final = "rules:v1"
RESTATED_OVERLAP: Final = 0.6
MAX_CONTENT_CHARS: Final = 4000
SHORT_ANSWER_WORDS: Final = 12
ANSWER_FLOOR: Final = 0.3     # with the learned judge: its least probability for a short answer to be kept


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory an extractor proposes: content, category, where it came from and its scores."""

    content: str
    category: str
    source: str
    scores: tuple[tuple[str, float], ...] = ()
    depends_on: tuple[int, ...] = ()          # indices of other candidates of the same episode it rests on


def _content_words(text: str) -> set[str]:
    return {w for w in words(text) if len(w) > 1 or not w.isascii()}


def _join(texts: Sequence[str]) -> str:
    """Sentences of one message joined again (Chinese without spaces, each closed with 。 when joined)."""
    if len(texts) == 1:
        return texts[0][:MAX_CONTENT_CHARS]
    glue = "" if all(is_chinese(t) for t in texts) else " "
    out = glue.join(t if t[-1] in "。！？.!?；;" or glue == " " else t + "。" for t in texts)
    return out[:MAX_CONTENT_CHARS]


def _answered_question(statements: Sequence[Statement], turn: int) -> Statement | None:
    """The assistant's question the user's `turn` answers (the last sentence of the turn before it)."""
    before = [s for s in statements if s.turn == turn - 1]
    return before[-1] if before and before[-1].role == "assistant" and before[-1].question else None


def _asks_about_the_user(question: str) -> bool:
    """An assistant's question whose answer may be something about the user: neither an offer nor
    small talk ("did you make it in okay?")."""
    return not (cues.OFFER_EN.match(question) or cues.OFFER_ZH.search(question)
                or cues.SMALL_TALK_EN.search(question) or cues.SMALL_TALK_ZH.search(question))


def _user_turn(statements: Sequence[Statement], turn: int) -> tuple[list[Statement], str]:
    """What a user turn contributes: its sentences that are not chatter when one of them is informative
    (a fact often spans the sentences of one message: "CET. standup is 9:45"); or a short answer to
    the assistant's question, with the question for context ("Who hosts your DNS? cloudflare"), unless
    the conversation is a game (riddles, jokes, a quiz)."""
    own = [s for s in statements if s.turn == turn]
    kept = [s for s in own if not (s.pleasantry or s.transient or s.hedged) and (not s.question or s.remember)]
    if any(s.informative for s in own):
        return kept, _join([s.text for s in kept])
    asked = _answered_question(statements, turn)
    answer = [s for s in own if not (s.question or s.transient or s.hedged or s.request)
              and (not s.pleasantry or s.content_words >= 1) and (s.judged is None or s.judged >= ANSWER_FLOOR)]
    game = any(cues.GAME.search(s.text) for s in statements if s.turn < turn)
    if asked is not None and not game and _asks_about_the_user(asked.text) and answer and not cues.QUESTION_START_EN.match(answer[0].text) \
            and sum(len(words(s.text)) for s in answer) <= SHORT_ANSWER_WORDS:
        return answer, _join([asked.text, *[s.text for s in answer]])
    return [], ""


def _correct_earlier(out: list[Candidate], content: str) -> bool:
    """The user correcting a value they gave earlier in the episode updates that earlier memory.
    True when the correction says nothing more and so needs no memory of its own."""
    mine = [i for i, c in enumerate(out) if c.source == "user_chat"]
    fixed = corrections.correct([out[i].content for i in mine], content)
    if fixed is None:
        return False
    index, text = fixed
    out[mine[index]] = replace(out[mine[index]], content=text)
    return corrections.says_nothing_else(content)


def extract(statements: Sequence[Statement]) -> list[Candidate]:
    kept_user_words: list[set[str]] = []
    out: list[Candidate] = []
    for turn in sorted({s.turn for s in statements}):
        own = [s for s in statements if s.turn == turn]
        role = own[0].role
        if role == "user":
            group, content = _user_turn(statements, turn)
        else:
            group = [s for s in own if s.informative]
            content = _join([s.text for s in group]) if group else ""
        if not content:
            continue
        bag = _content_words(content)
        if role != "user" and any(len(bag & seen) >= RESTATED_OVERLAP * max(1, len(bag)) for seen in kept_user_words):
            continue
        if role == "user":
            kept_user_words.append(bag)
            if _correct_earlier(out, content):
                continue
        category = min((s.category for s in group), key=CATEGORY_ORDER.index)
        scores = [("rule", max(s.score for s in group))]
        judged = [s.judged for s in group if s.judged is not None]
        if judged:
            scores.append(("learned", max(judged)))
        out.append(Candidate(content, category, "user_chat" if role == "user" else "agent_inference", tuple(scores)))
    return out
