"""Cheap text features of a sentence for the extraction heads: no model, no embedding.

Hashed character n-grams (2-5, any script) and words, the cue rules of ``cues`` as features, and
what the thread's opening message asks when the sentence is a reply. The same function feeds
training (``training/extraction/train.py``) and the shipped heads, so the two cannot drift.
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from functools import lru_cache

import numpy as np

from teamlore.extraction import cues

DIMENSIONS = 1 << 16
_NGRAMS = (2, 3, 4, 5)
_PRIME = np.uint64(1_000_003)
_MASK = np.uint64(DIMENSIONS - 1)
_SALT = {n: np.uint64(0x9E3779B97F4A7C15 * n % (1 << 64)) for n in _NGRAMS}
_DIGIT = re.compile(r"\d")
_WORDS = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_PARENT_WORDS = 6
# Each cue rule that fires counts this many times: a rule is one feature among a few hundred
# n-grams, and should weigh more than any one of them (chosen by cross-validation on training).
CUE_REPEAT = 4


def normalise(text: str) -> str:
    return _DIGIT.sub("0", unicodedata.normalize("NFKC", text).casefold())


def features(
    sentence: str, parent: str | None = None, crossed: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(bucket indices, weights) of ``sentence`` (already cleaned of markup), L2-normalised.

    ``crossed`` (the type heads): a reply's own cues, length and first word, each crossed with
    what its thread's opening message is (its cues), so "Friday" under "when is the freeze?"
    and "the freeze is Friday" under the same parent can weigh differently.

    The arrays are read-only: a kept sentence is read, confirmed and typed, and asks for the same
    features each time (crossing changes nothing without a parent), so they are kept a while."""
    return _features(sentence, parent, crossed and parent is not None)


@lru_cache(maxsize=4096)
def _features(sentence: str, parent: str | None, crossed: bool) -> tuple[np.ndarray, np.ndarray]:
    text = normalise(sentence)
    buckets = [_char_ngrams(f" {text} ")]
    named: list[str] = []
    words = _WORDS.findall(text)
    named += ["w" + w for w in words]
    named += ["b" + a + " " + b for a, b in zip(words, words[1:], strict=False)]
    named += [f"len{min(_length(text, words), 24) // 3}"]
    named += ["cue:" + name for name in cues.fired(sentence) for _ in range(CUE_REPEAT)]
    buckets.append(_hashed(tuple(named)))
    if parent is not None:
        buckets.append(_parent(parent))
        if crossed:
            own = [n for n in named if n.startswith(("cue:", "len"))] + ["w0" + w for w in words[:1]]
            buckets.append(
                _hashed(tuple(f"x{p}|{o}" for p in _parent_cues(parent) for o in dict.fromkeys(own)))
            )
    index, counts = np.unique(np.concatenate(buckets).astype(np.int64), return_counts=True)
    weights = np.log1p(counts.astype(np.float32))
    weights /= np.float32(np.linalg.norm(weights))
    index.flags.writeable = weights.flags.writeable = False
    return index, weights


def _length(text: str, words: list[str]) -> int:
    """The sentence's length in words; in a script written without spaces a run of letters is
    one "word", so there about two characters count as one (else every Japanese sentence would
    look as short as "lol")."""
    return len(words) + len(cues.UNSPACED.findall(text)) // 2


def _hashed(named: tuple[str, ...]) -> np.ndarray:
    return np.fromiter((zlib.crc32(n.encode()) for n in named), np.uint64, len(named)) & _MASK


@lru_cache(maxsize=4096)
def _parent(parent: str) -> np.ndarray:
    """A reply's features from its thread's opening message (the same for every reply)."""
    named = ["reply"]
    named += ["pw" + w for w in _WORDS.findall(normalise(parent))[:_PARENT_WORDS]]
    named += ["pcue:" + name for name in cues.fired(parent)]
    return _hashed(tuple(named))


@lru_cache(maxsize=4096)
def _parent_cues(parent: str) -> tuple[str, ...]:
    return ("reply", *cues.fired(parent))


def _char_ngrams(text: str) -> np.ndarray:
    """Rolling polynomial hashes of every character n-gram, vectorised."""
    codes = np.frombuffer(text.encode("utf-32-le"), np.uint32).astype(np.uint64)
    found = []
    for n in _NGRAMS:
        if len(codes) < n:
            continue
        span = len(codes) - n + 1
        hashed = np.zeros(span, np.uint64)
        for offset in range(n):
            hashed = hashed * _PRIME + codes[offset : offset + span]
        found.append((hashed ^ _SALT[n]) * _PRIME >> np.uint64(20) & _MASK)
    return np.concatenate(found) if found else np.zeros(0, np.uint64)
