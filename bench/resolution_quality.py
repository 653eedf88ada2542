"""Precision and recall of "supersedes" (and the full confusion table) on the labelled corpus.

    python bench/resolution_quality.py [--corpus PATH] [--show-errors]

Runs the labelled corpus the rules were written against and the held-out corpus written apart.
With ``TEAMLORE_TEST_LLM_URL`` set (an OpenAI-compatible endpoint; model, key and threshold from
the usual ``TEAMLORE_LLM_*`` settings), each corpus also runs through the model judge behind the
heuristic guard, as the pipeline uses it, and its figures are printed beside the heuristic's.

Targets (issue 3): precision >= 0.95, recall >= 0.80 for the heuristic resolver.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
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


def _model_judge(url: str, people, folder: Path) -> Resolver:
    """The pipeline's judge: rules as the guard, the model behind it (no cache: every pair asked)."""
    from teamlore.config import Settings
    from teamlore.llm.client import ModelClient
    from teamlore.llm.judge import ModelJudge
    from teamlore.stores.embedded import EmbeddedStores

    settings = Settings(llm_base_url=url)
    client = ModelClient(settings, EmbeddedStores(folder / "spend.sqlite3").spend)
    return ModelJudge(client, HeuristicResolver(people), None, settings.llm_judge_min_confidence)


def _print(name: str, report: dict, show_errors: bool) -> None:
    print(
        f"{name}: {report['pairs']} pairs; supersedes precision {report['precision']:.3f}, "
        f"recall {report['recall']:.3f}; accuracy over four labels {report['accuracy']:.3f}"
    )
    for key, value in report["confusion"].items():
        print(f"  {key}: {value}")
    if show_errors:
        for error in report["errors"]:
            print("  ", *error)


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
    model_url = os.environ.get("TEAMLORE_TEST_LLM_URL", "")
    with tempfile.TemporaryDirectory() as folder:
        for corpus, people in runs:
            _print(
                f"{corpus.name} (heuristic)", evaluate(HeuristicResolver(people), corpus), args.show_errors
            )
            if model_url:
                judge = _model_judge(model_url, people, Path(folder) / corpus.stem)
                _print(f"{corpus.name} (model judge)", evaluate(judge, corpus), args.show_errors)
                for row in judge.client.ledger.totals():
                    print(
                        f"  model {row.model}: asked about {row.calls} pairs (the guard decided the rest), "
                        f"{row.fallbacks} fell back to the rules, {row.prompt_tokens:,} + "
                        f"{row.completion_tokens:,} tokens"
                    )


if __name__ == "__main__":
    main()
