"""The learned pair judge: two gradient-boosted tree ensembles over `commands.conflicts.pair_features`,
one for "these two memories cannot both be true as stated" (incompatible: a conflict, or an update),
one for "they state one fact". Trained by `tests/bench/train_conflicts.py` on the labelled pairs (never the held-out
sets); the trees ship in `pair_model.json`, which names its features: trees over other features are
refused. Evaluated here in plain Python (a few hundred shallow trees: microseconds per pair), so the
judge needs no training library at run time. Pure: the same inputs give the same probabilities.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from commands.conflicts.pair_features import FEATURE_NAMES

MODEL_PATH: Final = Path(__file__).with_name("pair_model.json")


def _sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-max(-60.0, min(60.0, z))))


@dataclass(frozen=True)
class Trees:
    """A binary gradient-boosted ensemble: log-odds = init + rate x the sum of the trees' leaves.
    Each tree is (feature, threshold, left, right, value) per node; a leaf has left == -1; a sample
    goes left when its feature is <= the threshold."""

    init: float
    rate: float
    trees: list[tuple[list[int], list[float], list[int], list[int], list[float]]]

    def probability(self, x: list[float]) -> float:
        z = self.init
        for feature, threshold, left, right, value in self.trees:
            node = 0
            while left[node] != -1:
                node = left[node] if x[feature[node]] <= threshold[node] else right[node]
            z += self.rate * value[node]
        return _sigmoid(z)

    def to_json(self) -> dict[str, Any]:
        return {"init": self.init, "rate": self.rate, "trees": [list(t) for t in self.trees]}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Trees:
        return cls(float(doc["init"]), float(doc["rate"]), [tuple(t) for t in doc["trees"]])


@dataclass(frozen=True)
class PairModel:
    features: list[str]
    conflict_trees: Trees
    merge_trees: Trees
    conflict_threshold: float
    merge_threshold: float
    trained_on: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> PairModel:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc["features"] != list(FEATURE_NAMES):
            raise ValueError(f"{path}: trees over other features than the code's; retrain "
                             "(tests/bench/train_conflicts.py)")
        return cls(doc["features"], Trees.from_json(doc["conflict"]), Trees.from_json(doc["merge"]),
                   doc["conflict_threshold"], doc["merge_threshold"], doc.get("trained_on", {}))

    def to_json(self) -> dict[str, Any]:
        return {"features": self.features, "conflict_threshold": self.conflict_threshold,
                "merge_threshold": self.merge_threshold, "trained_on": self.trained_on,
                "conflict": self.conflict_trees.to_json(), "merge": self.merge_trees.to_json()}

    def conflict(self, x: list[float]) -> float:
        return self.conflict_trees.probability(x)

    def merge(self, x: list[float]) -> float:
        return self.merge_trees.probability(x)
