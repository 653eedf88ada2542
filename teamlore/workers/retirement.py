"""A small learned judge of retirement, over features the rules compute anyway.

The rules in ``resolver`` retire only what they are sure of; many real changes are worded so
that no single rule fires ("status page lives on instatus", "hiring mgr for the data analyst req
is Ben"). This judge weighs the same evidence together: the rules' own verdict, how much of each
subject the other names, the cosine of the value-masked statements (``meaning``), which kinds of
value differ, the cue phrases, the time between the two. It is a logistic regression trained by
``training/resolution/train.py`` on the training corpora only; the weights ship beside this file.

It may only turn a pair the rules left standing into a retirement, never the reverse, and only
inside the resolver's gates (``resolver._may_learn``). Without a calibrated meaning vector it
says nothing: its threshold was chosen with one. It is off in the pipeline: trained on one
hand's pairs and judged on another's, its own retirements were right only 55-83% of the time
(docs/benchmarks.md), too few to keep the rules' precision; the bench and the tests use it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

WEIGHTS = Path(__file__).with_name("retirement.npz")
KINDS = ("date", "time", "money", "number", "identifier", "status", "person", "name")
VERDICTS = ("supersedes", "correction", "duplicate", "contested", "unrelated")
# Personal narrative ("I went to the pottery class"): many-valued events, not slots.
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|me|my|mine)\b", re.I)
# "APAC renewals owner = Joon", "ember isles art lead → Tomasz": a slot given a value.
_ASSIGNMENT = re.compile(r"[:=→]|->|\bis now\b|\bnow is\b")
_PAST_EVENT = re.compile(
    r"\b(went|visited|attended|tried|made|took|saw|met|bought|started|joined|finished|read|watched|"
    r"painted|played|had|got|did|learned|found|wrote|ran|baked|cooked|adopted|signed up)\b",
    re.I,
)

FEATURES = (
    "bias",
    "cosine",
    "cosine_high",
    "cover_older",
    "cover_newer",
    "subject_cover_older",
    "subject_cover_newer",
    "log_subject_older",
    "log_subject_newer",
    "newer_short",
    *(f"differs_{k}" for k in KINDS),
    "any_differs",
    "shared_kind",
    "newer_has_value",
    "newer_only_words",
    "older_only_subject",
    "newer_only_subject",
    "newer_new_kind",
    "assignment",
    "old_named",
    "change_cue",
    "negated",
    "rename",
    "correction_cue",
    "hedged",
    "swapped",
    "added",
    "substituted",
    "cue_times_subject_cover",
    "cue_times_cosine_high",
    "log_gap_hours",
    "within_hour",
    "first_person",
    "past_event",
    *(f"rules_{v}" for v in VERDICTS),
)


def _cover(mine: frozenset[str], theirs: frozenset[str]) -> float:
    return sum(1 for w in mine if w in theirs) / len(mine) if mine else 0.0


def features(p: Any, verdict: str, gap: timedelta, similarity: float) -> np.ndarray:
    """The pair (``pairs.Pair``) as numbers, in the order of FEATURES."""
    sa, sb = p.sa, p.sb
    a_words = frozenset(p.a.words)
    hours = max(gap.total_seconds(), 0.0) / 3600
    text = p.a.text + " " + p.b.text
    cued = float(p.b.change or p.b.negated or p.b.correction or p.old_named)
    row = [
        1.0,
        similarity,
        max(similarity - 0.85, 0.0) * 10,
        p.cover_a,
        p.cover_b,
        _cover(sa.subject, sb.subject),
        _cover(sb.subject, sa.subject),
        math.log1p(len(sa.subject)),
        math.log1p(len(sb.subject)),
        float(len(sb.subject) <= 4),
        *(float(k in p.differing) for k in KINDS),
        float(bool(p.differing)),
        float(bool(set(sa.values) & set(sb.values))),
        float(bool(sb.values)),
        min(len(sb.subject - sa.subject - a_words), 5) / 5,
        min(len(sa.subject - sb.subject), 5) / 5,
        min(len(sb.subject - sa.subject), 5) / 5,
        float(bool(set(sb.values) - set(sa.values))),
        float(bool(_ASSIGNMENT.search(p.b.text))),
        float(p.old_named),
        float(p.b.change),
        float(p.b.negated),
        float(p.b.rename),
        float(p.b.correction),
        float(p.b.hedged),
        float(p.swapped),
        float(p.added),
        float(p.substituted),
        cued * _cover(sa.subject, sb.subject),
        cued * max(similarity - 0.85, 0.0) * 10,
        math.log1p(hours) / 8,
        float(hours < 1),
        float(bool(_FIRST_PERSON.search(text))),
        float(bool(_PAST_EVENT.search(text))),
        *(float(verdict == v) for v in VERDICTS),
    ]
    return np.asarray(row, dtype=np.float64)


@dataclass(frozen=True)
class RetirementJudge:
    """The trained logistic regression (see the module)."""

    weights: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    threshold: float

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> RetirementJudge | None:
        """The judge with its shipped weights; None when they are missing or were trained on other
        features."""
        if not path.exists():
            return None
        with np.load(path) as data:
            names = tuple(str(n) for n in data["features"])
            if names != FEATURES:  # weights from another feature set: better none than wrong ones
                return None
            return cls(data["weights"], data["mean"], data["scale"], float(data["threshold"]))

    def probability(self, row: np.ndarray) -> float:
        """How likely the pair this feature row describes is a retirement."""
        z = float(np.dot((row - self.mean) / self.scale, self.weights))
        return 1.0 / (1.0 + math.exp(-max(min(z, 30.0), -30.0)))

    def retires(self, row: np.ndarray) -> bool:
        """Whether that probability reaches the judge's threshold."""
        return self.probability(row) >= self.threshold
