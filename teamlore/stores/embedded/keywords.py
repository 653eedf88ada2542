"""Keyword ranking in memory: BM25 over postings held beside the vectors (``vector_index``).

SQLite's FTS5 finds matches quickly but ranks them slowly: its ``bm25()`` is computed for every
matching row, and each phrase of the query first scans its whole posting list to count the rows
holding it, so a channel filter written into the match costs a scan of the channel on every query.
Here the postings are numpy arrays per term; a query reads the lists of its own terms only and
scores them with FTS5's formula (k1 1.2, b 0.75, a weight per column, the row's length over all
its columns, document frequencies over every row held), so what it costs depends on how many
rows of the scope hold the query's words, not on the store: each term's list is kept per group (the
index's channels), and a query reads the lists of its scope's groups only.

Tokens: ``teamlore.terms.Tokenizer`` (words, lower-cased, Latin letters without their
diacritics, Porter-stemmed, as FTS5's ``porter unicode61 remove_diacritics 2`` does them; the
resolver's lookup, ``subjects``, and the Weaviate message index write the same terms).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from teamlore.terms import Tokenizer

K1 = 1.2
B = 0.75
ADD_SLICE = 8_192  # rows tokenized and grouped at a time


class Postings:
    """Per term and group, the positions of the rows holding it and its weighted count in each;
    per term, how many rows hold it (over every group); per row, its length in tokens. Rows are
    added at increasing positions, each in a group, and may be dropped (their text deleted); a
    dropped row stays in the lists and is skipped."""

    def __init__(self, weights: Sequence[float]) -> None:
        # One weight per text column; a column of weight 0 counts in a row's length only.
        self._weights = tuple(weights)
        self.tokenizer = Tokenizer()
        # term -> group -> (positions, weighted counts)
        self._terms: dict[str, dict[int, tuple[np.ndarray, np.ndarray]]] = {}
        # term -> rows holding it, and the number of drops when that was counted (a drop makes
        # the counts of the terms it held stale: they are counted again when next asked for)
        self._frequency: dict[str, tuple[int, int]] = {}
        self._drops = 0
        self._length = np.zeros(0, np.float32)
        self._alive = np.zeros(0, bool)
        self._total = 0.0  # tokens of the rows alive
        self._count = 0  # rows alive

    def add(self, start: int, rows: Sequence[Sequence[str]], groups: Sequence[int]) -> None:
        """Rows at positions ``start``, ``start + 1``, ...: each its column texts, the main text
        first, and its group. A row whose main text is empty (a deleted message, an erased fact)
        is held but not alive."""
        if start != len(self._length):
            raise ValueError(f"rows must be added in order: {start} after {len(self._length)}")
        # A slice at a time: opening a large store must not hold a Python object per posting.
        for first in range(0, len(rows), ADD_SLICE):
            self._add(start + first, rows[first : first + ADD_SLICE], groups[first : first + ADD_SLICE])

    def _add(self, start: int, rows: Sequence[Sequence[str]], groups: Sequence[int]) -> None:
        terms: list[str] = []  # one entry per (row, term)
        positions: list[int] = []
        grouped: list[int] = []
        counts: list[float] = []
        lengths = np.zeros(len(rows), np.float32)
        alive = np.zeros(len(rows), bool)
        tokens = self.tokenizer.tokens
        for offset, texts in enumerate(rows):
            if not texts[0]:
                continue
            held: dict[str, float] = {}
            size = 0
            for text, weight in zip(texts, self._weights, strict=True):
                found = tokens(text) if text else []
                size += len(found)
                if weight > 0:
                    for token, times in Counter(found).items():
                        held[token] = held.get(token, 0.0) + weight * times
            lengths[offset], alive[offset] = size, True
            terms.extend(held.keys())
            counts.extend(held.values())
            positions.extend([start + offset] * len(held))
            grouped.extend([groups[offset]] * len(held))
        self._length = np.concatenate([self._length, lengths])
        self._alive = np.concatenate([self._alive, alive])
        self._total += float(lengths.sum())
        self._count += int(alive.sum())
        if not terms:
            return
        # Group by term and group: one sort, then one append per (term, group); rows stay
        # ascending within each.
        names = sorted(set(terms))
        code = {name: i for i, name in enumerate(names)}
        codes = np.fromiter(map(code.__getitem__, terms), np.int64, len(terms))
        owners = np.asarray(grouped, np.int64)
        order = np.lexsort((owners, codes))
        at = np.asarray(positions, np.int32)[order]
        weights = np.asarray(counts, np.float32)[order]
        codes, owners = codes[order], owners[order]
        bounds = np.searchsorted(codes, np.arange(len(names) + 1))
        for i, name in enumerate(names):
            lo, hi = int(bounds[i]), int(bounds[i + 1])
            lists = self._terms.setdefault(name, {})
            holding, counted = self._frequency.get(name, (0, self._drops))
            self._frequency[name] = (holding + hi - lo, counted)
            cuts = np.flatnonzero(np.diff(owners[lo:hi])) + lo + 1
            for a, b in zip([lo, *cuts.tolist()], [*cuts.tolist(), hi], strict=True):
                group = int(owners[a])
                part = (at[a:b], weights[a:b])
                before = lists.get(group)
                lists[group] = (
                    part
                    if before is None
                    else (np.concatenate([before[0], part[0]]), np.concatenate([before[1], part[1]]))
                )

    def drop(self, position: int) -> None:
        """The row's text is gone: it matches nothing and counts in no statistic."""
        if self._alive[position]:
            self._alive[position] = False
            self._total -= float(self._length[position])
            self._count -= 1
            self._drops += 1

    def _rows_holding(self, term: str, lists: dict[int, tuple[np.ndarray, np.ndarray]]) -> int:
        """How many live rows hold ``term``, over every group (counted again after a drop)."""
        held, counted = self._frequency[term]
        if counted != self._drops:
            held = sum(int(self._alive[positions].sum()) for positions, _ in lists.values())
            self._frequency[term] = (held, self._drops)
        return held

    def scores(self, terms: Sequence[str], groups: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """(positions ascending, bm25) of every live row of ``groups`` holding any of ``terms``
        (each once). Document frequencies count every group."""
        count = self._count
        found_positions: list[np.ndarray] = []
        found_scores: list[np.ndarray] = []
        if count:
            average = self._total / count
            for term in terms:
                lists = self._terms.get(term)
                if lists is None:
                    continue
                inside = [lists[g] for g in groups if g in lists]
                if not inside:
                    continue
                frequency = self._rows_holding(term, lists)
                idf = math.log((count - frequency + 0.5) / (frequency + 0.5))
                idf = idf if idf > 0 else 1e-6  # as FTS5: a word in most rows still counts a little
                for positions, frequencies in inside:
                    if self._drops:
                        alive = self._alive[positions]
                        if not alive.all():
                            positions, frequencies = positions[alive], frequencies[alive]
                    if positions.size == 0:
                        continue
                    # In double precision, as FTS5 computes it (held in single to halve the memory).
                    weighted = frequencies.astype(np.float64)
                    norm = K1 * (1 - B + B * self._length[positions].astype(np.float64) / average)
                    found_positions.append(positions)
                    found_scores.append(idf * weighted * (K1 + 1) / (weighted + norm))
        if not found_positions:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        if len(found_positions) == 1:
            return found_positions[0], found_scores[0]
        rows, inverse = np.unique(np.concatenate(found_positions), return_inverse=True)
        return rows, np.bincount(inverse, weights=np.concatenate(found_scores), minlength=rows.size)
