"""Precision and recall of "supersedes" (and the full confusion table) on the labelled corpus.

    python bench/resolution_quality.py [--corpus PATH] [--show-errors]

Runs the labelled corpus the rules were written against and the held-out corpus written apart.

Targets (issue 3): precision >= 0.95, recall >= 0.80 for the heuristic resolver.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from teamlore.timeutil import parse_time
from teamlore.workers.resolver import Claim, HeuristicResolver, Resolver

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "resolution_pairs.jsonl"
# The people of the corpus' team, as the pipeline knows them from the channel's authors.
PEOPLE = ("alice", "bob", "chen", "dana", "omar", "priya")


def evaluate(resolver: Resolver, corpus: Path = CORPUS) -> dict:
    confusion: Counter[tuple[str, str]] = Counter()
    errors = []
    for line in corpus.read_text().splitlines():
        pair = json.loads(line)
        got = resolver.judge(
            Claim(pair["older"], parse_time(pair["older_ts"])),
            Claim(pair["newer"], parse_time(pair["newer_ts"])),
        )
        confusion[(pair["expected"], got.resolution.value)] += 1
        if got.resolution.value != pair["expected"]:
            errors.append((pair["id"], pair["expected"], got.resolution.value, got.reason))
    tp = confusion[("supersedes", "supersedes")]
    predicted = sum(v for (_, got), v in confusion.items() if got == "supersedes")
    actual = sum(v for (exp, _), v in confusion.items() if exp == "supersedes")
    return {
        "pairs": sum(confusion.values()),
        "precision": tp / predicted if predicted else 1.0,
        "recall": tp / actual if actual else 1.0,
        "accuracy": sum(v for (e, g), v in confusion.items() if e == g) / sum(confusion.values()),
        "confusion": {f"{e}->{g}": v for (e, g), v in sorted(confusion.items())},
        "errors": errors,
    }


HOLDOUT = CORPUS.with_name("resolution_pairs_holdout.jsonl")
# Written separately, never used to tune the rules: it measures how they generalise.
HOLDOUT_PEOPLE = ("ines", "kwame", "lars", "mei", "priya", "rafael", "sofia", "tomas")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=None, help="Only this corpus.")
    parser.add_argument("--show-errors", action="store_true")
    args = parser.parse_args()
    people_of = {CORPUS.name: PEOPLE, HOLDOUT.name: HOLDOUT_PEOPLE}
    runs = (
        [(args.corpus, people_of.get(args.corpus.name, PEOPLE))]
        if args.corpus
        else [(CORPUS, PEOPLE), (HOLDOUT, HOLDOUT_PEOPLE)]
    )
    for corpus, people in runs:
        report = evaluate(HeuristicResolver(people), corpus)
        print(
            f"{corpus.name}: {report['pairs']} pairs; supersedes precision {report['precision']:.3f}, "
            f"recall {report['recall']:.3f}; accuracy over four labels {report['accuracy']:.3f}"
        )
        for key, value in report["confusion"].items():
            print(f"  {key}: {value}")
        if args.show_errors:
            for error in report["errors"]:
                print("  ", *error)


if __name__ == "__main__":
    main()
