"""Train the learned pair judge (`commands.conflicts.judge`) on the labelled pairs of
`tests/bench/data/conflicts/` and write its weights to `commands/conflicts/pair_model.json`.

Each hand's pairs are pooled as the bench loads them (every older memory first, then the newer ones in
order); each newer memory is compared with its :data:`CANDIDATES` nearest memories by USE cosine,
as the commit path does. (Pooling every hand in one store was tried: with six times the look-alike
neighbours the trees learned to doubt every pair, and leave-one-hand-out precision fell, not rose.) A candidate that is the newer memory's own partner carries the pair's label;
every other candidate (a look-alike's partner, a memory of another pair) is a "none" example. Two
gradient-boosted tree ensembles are fitted (sklearn, exported as plain trees) on what the texts say,
not on who wrote them: "incompatible" (a conflict or a replacement: both give a value for the same
thing and the values differ, or one denies the other) vs not, and "one fact" (a duplicate, or the
two sides of an importance conflict) vs not. The rules of `commands.conflicts.compare.judge` then
tell a conflict from an update by the cue and the authors.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/train_conflicts.py [--cv] [--exclude heldout1,heldout2]

`--cv` prints leave-one-hand-out figures (each hand judged by a model trained on the others).
The held-out sets are always excluded from training.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from commands.conflicts.compare import CONFLICT, DUPLICATE, REPLACEMENT, Side, judge  # noqa: E402
from commands.conflicts.judge import MODEL_PATH, PairModel, Trees  # noqa: E402
from commands.conflicts.pair_features import FEATURE_NAMES, pair_features  # noqa: E402
from commands.conflicts.text_signals import signals  # noqa: E402

DATA = ROOT / "tests" / "bench" / "data" / "conflicts"
HELD_OUT = ("heldout1", "heldout2")
CANDIDATES = 8
TREES, DEPTH, RATE = 200, 3, 0.05


def side(m: dict, mid: str) -> Side:
    return Side(mid, signals(m["content"]), m["agent"], m["source"], m["tier"], bool(m.get("distilled")))


def examples(pairs: list[dict], embed) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple]]:
    """Features and labels (conflict, merge) of every (newer memory, candidate) of one hand's pool."""
    mems = [(f"{p['id']}:a", p["a"]) for p in pairs] + [(f"{p['id']}:b", p["b"]) for p in pairs]
    vecs = np.asarray(embed([m["content"] for _, m in mems]), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    sides = [side(m, mid) for mid, m in mems]
    label = {p["id"]: "importance" if p["label"] == "conflict" and p["kind"] == "importance" else p["label"]
             for p in pairs}   # an importance conflict's two memories state one fact
    n = len(pairs)
    xs, yc, ym, keys = [], [], [], []
    for i in range(n):
        b = n + i
        pool = list(range(n)) + list(range(n, b))
        cos = vecs[pool] @ vecs[b]
        for j in np.argsort(-cos)[:CANDIDATES]:
            c = pool[j]
            partner = c == i
            lab = label[pairs[i]["id"]] if partner else "none"
            xs.append(pair_features(sides[b], sides[c], float(cos[j])))
            yc.append(lab in ("conflict", "replacement"))
            ym.append(lab in ("duplicate", "importance"))
            keys.append((pairs[i]["id"], mems[c][0], lab, sides[b], sides[c], float(cos[j])))
    return np.asarray(xs), np.asarray(yc), np.asarray(ym), keys


def fit(x: np.ndarray, y: np.ndarray) -> Trees:
    from sklearn.ensemble import GradientBoostingClassifier

    clf = GradientBoostingClassifier(n_estimators=TREES, max_depth=DEPTH, learning_rate=RATE, subsample=0.8,
                                     random_state=0).fit(x, y)
    init = float(clf._raw_predict_init(x[:1])[0, 0])
    trees = []
    for est in clf.estimators_[:, 0]:
        t = est.tree_
        trees.append(([int(f) for f in t.feature], [float(v) for v in t.threshold],
                      [int(c) for c in t.children_left], [int(c) for c in t.children_right],
                      [float(v) for v in t.value[:, 0, 0]]))
    return Trees(init, RATE, trees)


def probabilities(trees: Trees, x: np.ndarray) -> np.ndarray:
    return np.asarray([trees.probability(list(row)) for row in x])


def prf(p: np.ndarray, y: np.ndarray, t: float) -> str:
    pred = p >= t
    tp = int((pred & y).sum())
    return f"P {tp / max(1, pred.sum()):.2f} R {tp / max(1, y.sum()):.2f}"


def judged(model: PairModel, keys: list[tuple]) -> str:
    """The judge's figures on one hand, counted as the bench counts them: conflicts reported vs the
    labelled conflict pairs, merges (duplicates and replacements) vs the labelled ones."""
    found = {"conflict": [0, 0], "merge": [0, 0]}   # [reported, right]
    for pid, _, lab, new, old, cos in keys:
        v = judge(new, old, cos, model)
        if v.relation == CONFLICT:
            found["conflict"][0] += 1
            found["conflict"][1] += lab in ("conflict", "importance")
        elif v.relation in (DUPLICATE, REPLACEMENT):
            found["merge"][0] += 1
            found["merge"][1] += lab in ("duplicate", "replacement")
    n_c = len({k[0] for k in keys if k[2] in ("conflict", "importance")})
    n_m = len({k[0] for k in keys if k[2] in ("duplicate", "replacement")})
    (rc, tc), (rm, tm) = found["conflict"], found["merge"]
    return (f"judge: conflicts P {tc / max(1, rc):.2f} R {tc / max(1, n_c):.2f} | "
            f"merges P {tm / max(1, rm):.2f} R {tm / max(1, n_m):.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cv", action="store_true")
    ap.add_argument("--exclude", default="")
    ap.add_argument("--conflict-threshold", type=float, default=0.2)
    ap.add_argument("--merge-threshold", type=float, default=0.7)
    args = ap.parse_args()
    exclude = set(HELD_OUT) | {e for e in args.exclude.split(",") if e}
    hands = {f.stem: json.loads(f.read_text(encoding="utf-8")) for f in sorted(DATA.glob("*.json"))
             if f.stem not in exclude}
    from projections.models.use_embedder import LocalUSEEmbedder

    use = LocalUSEEmbedder()
    data = {h: examples(p, use.embed) for h, p in hands.items()}
    if args.cv:
        for h in data:
            rest = [data[o] for o in data if o != h]
            x = np.vstack([r[0] for r in rest])
            tc = fit(x, np.concatenate([r[1] for r in rest]))
            tm = fit(x, np.concatenate([r[2] for r in rest]))
            xt, yc, ym, _ = data[h]
            pc, pm = probabilities(tc, xt), probabilities(tm, xt)
            print(f"{h:8s} incompatible " + " | ".join(f"t{t}: {prf(pc, yc, t)}" for t in (0.2, 0.3, 0.4, 0.5, 0.7)))
            print(f"{h:8s} one fact     " + " | ".join(f"t{t}: {prf(pm, ym, t)}" for t in (0.3, 0.5, 0.7, 0.8, 0.9)))
            model = PairModel(list(FEATURE_NAMES), tc, tm, args.conflict_threshold, args.merge_threshold)
            print(f"{h:8s} {judged(model, data[h][3])}")
    x = np.vstack([d[0] for d in data.values()])
    tc = fit(x, np.concatenate([d[1] for d in data.values()]))
    tm = fit(x, np.concatenate([d[2] for d in data.values()]))
    model = PairModel(list(FEATURE_NAMES), tc, tm, args.conflict_threshold, args.merge_threshold,
                      {"hands": sorted(hands), "excluded": sorted(exclude), "examples": int(len(x))})
    MODEL_PATH.write_text(json.dumps(model.to_json(), separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {MODEL_PATH} ({len(x)} examples from {len(hands)} hands)")


if __name__ == "__main__":
    main()
