"""The learned heads of the offline extractor: small linear models shipped as ``heads.npz``.

- ``label``: informative / chatter / question, from cheap text features only (``features``), so
  what is kept never waits for an embedding.
- ``confirm``: the same question asked again of a kept sentence with its statement's vector (the
  vector every kept statement gets anyway), when one is at hand: a second look at chatter.
- ``fact type``: from the same features plus the statement's embedding (the vector every kept
  statement gets anyway) when one is at hand; a text-only head otherwise.

Trained by ``training/extraction/train.py`` from the labelled corpus in ``training/extraction``;
the file records the corpus checksum and the decision threshold chosen on the training split.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from teamlore.domain import FactType
from teamlore.extraction import cues
from teamlore.extraction.features import DIMENSIONS, features

WEIGHTS = Path(__file__).with_name("heads.npz")
LABELS = ("chatter", "question", "informative")
# The informative types, in the guideline's order of precedence.
TYPES = (
    FactType.DEFINITION,
    FactType.DECISION,
    FactType.ACTION_ITEM,
    FactType.OWNERSHIP,
    FactType.STATUS,
    FactType.SCHEDULE,
    FactType.METRIC,
    FactType.ANNOUNCEMENT,
    FactType.ANSWER,
    FactType.STATEMENT,
)
_ANSWER = TYPES.index(FactType.ANSWER)
# The doubt band: a sentence the text head calls chatter with a probability below this ceiling is
# not dropped outright when the statement's vector can be had; it is embedded and kept unless the
# vector's look (``confirm``) puts chatter at or above the doubt floor. Chosen out of fold on the
# training split (2026-12-04, docs/benchmarks.md); without vectors (another embedder, or bulk
# imports with vectors filled behind) the text head's decision stands as before.
# The type heads read a reply's own cues crossed with its parent's (``features(crossed=True)``).
CROSSED = True
DOUBT_CEILING = 0.70
DOUBT_VECTOR_FLOOR = 0.40


@dataclass(frozen=True, slots=True)
class Reading:
    """What the label head makes of one sentence."""

    label: str  # one of LABELS
    chatter: float  # the probability that it is chatter
    doubtful: bool = False  # chatter, but inside the doubt band: a vector may still keep it


@dataclass(frozen=True, slots=True)
class Linear:
    weights: np.ndarray  # (DIMENSIONS, classes)
    bias: np.ndarray  # (classes,)
    vector_weights: np.ndarray | None = None  # (embedding dimensions, classes)

    def probabilities(
        self, index: np.ndarray, values: np.ndarray, vector: np.ndarray | None = None
    ) -> np.ndarray:
        logits = values @ self.weights[index] + self.bias
        if self.vector_weights is not None and vector is not None:
            logits = logits + vector @ self.vector_weights
        logits = logits - logits.max()
        exp = np.exp(logits)
        probabilities: np.ndarray = exp / exp.sum()
        return probabilities


class Heads:
    def __init__(
        self,
        label: Linear,
        confirm: Linear,
        typed: Linear,
        typed_text: Linear,
        chatter_floor: float,
        vector_chatter_floor: float,
    ) -> None:
        self.label_head, self.confirm_head = label, confirm
        self.type_head, self.type_text_head = typed, typed_text
        self.chatter_floor, self.vector_chatter_floor = chatter_floor, vector_chatter_floor

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> Heads:
        with np.load(path) as data:
            if int(data["dimensions"]) != DIMENSIONS:
                raise ValueError(f"{path}: trained for {int(data['dimensions'])} feature buckets")

            def linear(name: str, with_vectors: bool = False) -> Linear:
                vectors = data[f"{name}_vector_weights"].astype(np.float32) if with_vectors else None
                return Linear(data[f"{name}_weights"].astype(np.float32), data[f"{name}_bias"], vectors)

            return cls(
                linear("label"),
                linear("confirm", True),
                linear("type", True),
                linear("type_text"),
                float(data["chatter_floor"]),
                float(data["vector_chatter_floor"]),
            )

    def read(self, sentence: str, parent: str | None) -> Reading:
        """From text alone: what is kept never waits for an embedding."""
        p = self.label_head.probabilities(*features(sentence, parent))
        chatter, question, informative = (float(x) for x in p)
        asked = question > informative or asks(sentence)
        if chatter >= self.chatter_floor:
            return Reading("chatter", chatter, chatter < DOUBT_CEILING and not asked)
        if asked:
            return Reading("question", chatter)
        return Reading("informative", chatter)

    def confirm(self, sentence: str, parent: str | None, vector: np.ndarray, doubtful: bool = False) -> bool:
        """Whether a sentence ``read`` kept (or doubted) is informative given its statement's
        vector (which a kept one gets anyway); the second, better-informed look at chatter."""
        p = self.confirm_head.probabilities(*features(sentence, parent), vector)
        return float(p[0]) < (DOUBT_VECTOR_FLOOR if doubtful else self.vector_chatter_floor)

    def decide(self, sentence: str, parent: str | None, vector: np.ndarray | None = None) -> str:
        """``read``, then ``confirm`` when the statement's vector is at hand: the label the
        extractor acts on (it runs the two steps apart, embedding only what ``read`` kept or
        doubted)."""
        reading = self.read(sentence, parent)
        if vector is None:
            return reading.label
        if reading.label == "informative" and not self.confirm(sentence, parent, vector):
            return "chatter"
        if reading.doubtful and self.confirm(sentence, parent, vector, doubtful=True):
            return "informative"
        return reading.label

    def fact_type(self, sentence: str, parent: str | None, vector: np.ndarray | None) -> FactType:
        index, values = type_features(sentence, parent)
        head = self.type_head if vector is not None else self.type_text_head
        p = head.probabilities(index, values, vector)
        if parent is None:
            p[_ANSWER] = 0.0  # only a reply answers
        return TYPES[int(np.argmax(p))]


def type_features(sentence: str, parent: str | None) -> tuple[np.ndarray, np.ndarray]:
    """The type heads' features: the label heads' with a reply's cues crossed with its parent's."""
    return features(sentence, parent, crossed=CROSSED)


def asks(sentence: str) -> bool:
    """A sentence ending in a question mark asks, unless it asks someone to do something
    ("@mara can you bump node to 20.11 before friday?" is an action item)."""
    said = cues.fired(sentence)
    return "question_mark" in said and not ("mention" in said and "action_item" in said)


@cache
def shipped() -> Heads:
    """The heads inside the package (loaded once per process)."""
    return Heads.load()
