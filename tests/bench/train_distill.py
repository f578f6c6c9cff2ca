"""Train the learned distillation judge (commands/distill/statement_model.json, extractor `learned:v1`).

Rows: every user statement of the hand-labelled episodes of tests/bench/data/distill/ (as the
rules read it: cleaned text, flags, signals), labelled memorable when it contains a key term of a
labelled fact of its episode. Features: the statement's multilingual-e5-small embedding and the
rules' features (`commands.distill.learned.rule_features`). Model: L2 logistic regression (C=1).

The held-out sets named by --exclude are left out (by default the newest one, heldout6, kept blind
for the README's figure). --cv reports, for each hand (each pair of files written by one person),
the rules and the judge trained on the other hands: recall and junk as tests/bench/distill.py
counts them. That is the honest estimate for a new hand's data, and where the threshold comes from.

Usage: .venv/bin/python tests/bench/train_distill.py [--cv] [--exclude heldout6 ...] [--threshold 0.7]
Retrain after changing the rules (statements.py, cues.py): the features are theirs. Needs
scikit-learn (installed with hdbscan); inference needs only numpy.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

from commands.distill.engine import distill_by_rules  # noqa: E402
from commands.distill.learned import (  # noqa: E402
    EXTRACTOR, MODEL_PATH, StatementJudge, StatementModel, feature_names, rule_features)
from commands.distill.statements import read_statements  # noqa: E402
from projections.models.e5 import E5Encoder  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "distill"
C = 1.0


def load_hands(exclude: set[str]) -> dict[str, list[dict]]:
    """Episodes by hand: a file stem without its language (`episodes`, `episodes-extra3`, ...)."""
    hands: dict[str, list[dict]] = defaultdict(list)
    for path in sorted(DATA.glob("episodes*-*.json")):
        stem, lang = path.stem.rsplit("-", 1)
        doc = json.loads(path.read_text(encoding="utf-8"))
        hands[stem] += [dict(e, lang=lang) for e in doc["episodes"] if e["split"] not in exclude]
    return {h: eps for h, eps in hands.items() if eps}


def matches(memory: str, fact: dict) -> bool:
    low = memory.casefold()
    return all(t.casefold() in low for t in fact["key_terms"])


class CachedEncoder:
    """The real encoder, each text embedded once (the CV runs every episode several times)."""

    def __init__(self, encoder: E5Encoder) -> None:
        self.encoder, self.model_id, self.dim = encoder, encoder.model_id, encoder.dim
        self.cache: dict[str, np.ndarray] = {}

    def encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            for t, v in zip(missing, self.encoder.encode(missing, is_query)):
                self.cache[t] = v
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


def rows_of(episodes: list[dict], encoder: CachedEncoder) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for ep in episodes:
        users = [s for s in read_statements(ep["turns"], ep["kind"]) if s.role == "user"]
        if not users:
            continue
        vectors = encoder.encode([s.text for s in users], is_query=False)
        for s, v in zip(users, vectors):
            low = s.text.casefold()
            ys.append(any(t.casefold() in low for f in ep["facts"] for t in f["key_terms"]))
            xs.append(np.concatenate([v.astype(np.float64), rule_features(s, ep["kind"])]))
    return np.asarray(xs), np.asarray(ys, dtype=int)


def fit(x: np.ndarray, y: np.ndarray, threshold: float, encoder_id: str) -> StatementModel:
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=C, max_iter=5000).fit(x, y)
    return StatementModel(lr.coef_[0].astype(np.float64), float(lr.intercept_[0]), threshold, encoder_id,
                          tuple(feature_names()))


def score(episodes: list[dict], judge: StatementJudge | None) -> tuple[float, float, int]:
    facts = recalled = memories = junk = 0
    for ep in episodes:
        out = [c.content for c in distill_by_rules(ep["kind"], ep["status"], ep["turns"], judge).candidates]
        facts += len(ep["facts"])
        recalled += sum(any(matches(m, f) for m in out) for f in ep["facts"])
        memories += len(out)
        junk += sum(not any(matches(m, f) for f in ep["facts"]) for m in out)
    return recalled / max(1, facts), junk / max(1, memories), memories


def cross_validate(hands: dict[str, list[dict]], encoder: CachedEncoder, threshold: float) -> None:
    print(f"leave-one-hand-out (the judge trained on the other hands; threshold {threshold}):")
    print(f"{'hand':<20} {'episodes':>8} {'rules recall':>12} {'junk':>6} {'learned recall':>15} {'junk':>6}")
    data = {h: rows_of(eps, encoder) for h, eps in hands.items()}
    for hand, eps in hands.items():
        x = np.vstack([data[h][0] for h in hands if h != hand])
        y = np.concatenate([data[h][1] for h in hands if h != hand])
        judge = StatementJudge(encoder, fit(x, y, threshold, encoder.model_id))
        r_rec, r_junk, _ = score(eps, None)
        l_rec, l_junk, _ = score(eps, judge)
        print(f"{hand:<20} {len(eps):>8} {r_rec:>12.1%} {r_junk:>6.1%} {l_rec:>15.1%} {l_junk:>6.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--exclude", nargs="*", default=["heldout6"], help="splits left out (blind held-out sets)")
    parser.add_argument("--threshold", type=float, default=0.7)
    parser.add_argument("--cv", action="store_true", help="report leave-one-hand-out figures, do not write the model")
    args = parser.parse_args()
    hands = load_hands(set(args.exclude))
    encoder = CachedEncoder(E5Encoder())
    if args.cv:
        cross_validate(hands, encoder, args.threshold)
        return
    episodes = [e for eps in hands.values() for e in eps]
    x, y = rows_of(episodes, encoder)
    model = fit(x, y, args.threshold, encoder.model_id)
    ids = "\n".join(sorted(e["id"] for e in episodes)).encode()
    doc = {"extractor": EXTRACTOR, "encoder": model.encoder, "threshold": model.threshold, "C": C,
           "features": list(model.features),
           "trained_on": {"episodes": len(episodes), "statements": int(len(y)), "memorable": int(y.sum()),
                          "hands": sorted(hands), "excluded": sorted(args.exclude),
                          "episode_ids_sha256": hashlib.sha256(ids).hexdigest()},
           "bias": round(model.bias, 6), "weights": [round(float(w), 6) for w in model.weights]}
    MODEL_PATH.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {MODEL_PATH}: {len(episodes)} episodes, {len(y)} user statements ({int(y.sum())} memorable)")


if __name__ == "__main__":
    main()
