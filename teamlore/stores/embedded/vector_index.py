"""Exact cosine search over versioned rows (fact versions, message versions), held in numpy and
refreshed from the SQLite file.

Every version row is mirrored here with its scope and its four time bounds as integer arrays, so
the scope and time predicate are compiled into the semantic query as a vectorised mask, exactly as
the SQL queries compile them. A query touches only its scope: each channel keeps the positions of
its rows and its own contiguous block of vectors, stored once per embedding key (many versions
share one statement), so scoring a scope of two channels multiplies those two blocks, not the
store (exact search is bound by memory bandwidth). A row without a vector yet is held too (``row``
-1): it is never a semantic hit, but its place in the mask is known.

A large scope is read in two passes: every candidate is scored from an int8 copy of its vector (a
quarter of the bytes; each row scaled to its own largest component), then the best of those are
scored again exactly. The int8 cosine is within about 0.002 of the exact one, so the exact best
``limit`` are among the first pass's best RESCORE unless hundreds of rows tie within that margin
(``bench/search_check.py compare`` checks it against exact search on a kept store).
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import simsimd

from teamlore.domain import ResolvedView, Scope
from teamlore.stores.embedded.keywords import Postings
from teamlore.timeutil import to_micros

# Below 1/GATHER_SHARE of a channel's vectors, a query copies the rows it needs out and multiplies
# those; above it, multiplying the channel's block and picking the scores is cheaper (no copy).
GATHER_SHARE = 8
# Rows read from the file at a time when refreshing.
REFRESH_SLICE = 20_000
# A block grows by this factor when full (amortised appends; at most a third of it unused).
GROWTH = 1.5
# From this many candidates on, a semantic query takes the int8 first pass (see the module);
# below it, exact search costs less than a millisecond or two and stays exact.
ROUGH_FROM = 8_192
# Candidates of the first pass scored again exactly: at least this many, and four per result.
RESCORE = 256
# From this many scores on, ``best_of`` and ``middle_of`` partition only those a strided sample
# of about SAMPLE of them says may matter (exact all the same: they check, and fall back).
SAMPLED_FROM = 8_192
SAMPLE = 1_024


class _Codes:
    """Small integer codes for workspace and channel strings."""

    def __init__(self) -> None:
        self.by_name: dict[str, int] = {}

    def code(self, name: str) -> int:
        return self.by_name.setdefault(name, len(self.by_name))

    def lookup(self, name: str) -> int:
        return self.by_name.get(name, -1)


class _Block:
    """One channel's vectors, contiguous and in the order first seen; one row per embedding key;
    beside them their int8 codes and each code's scale (the first pass of a large search)."""

    def __init__(self) -> None:
        self._data = np.zeros((0, 0), np.float32)
        self._codes = np.zeros((0, 0), np.int8)
        self._scale = np.zeros(0, np.float32)
        self.size = 0
        self.row_of: dict[str, int] = {}  # embedding key -> row

    def reserve(self, extra: int, dim: int) -> None:
        """Room for ``extra`` more rows: a bulk load (opening a store) allocates once, exactly;
        a few rows at a time still grow by GROWTH."""
        if self.size + extra > self._data.shape[0]:
            self._grow(max(self.size + extra, int(self.size * GROWTH), 64), dim)

    def add(self, key: str, vector: np.ndarray) -> int:
        if self.size == self._data.shape[0]:
            self._grow(max(64, int(self.size * GROWTH)), vector.shape[0])
        self._data[self.size] = vector
        self._codes[self.size], self._scale[self.size] = _code(vector)
        self.row_of[key] = self.size
        self.size += 1
        return self.size - 1

    def _grow(self, rows: int, dim: int) -> None:
        grown = np.zeros((rows, dim), np.float32)
        codes = np.zeros((rows, dim), np.int8)
        scale = np.zeros(rows, np.float32)
        if self.size:
            grown[: self.size] = self._data[: self.size]
            codes[: self.size] = self._codes[: self.size]
            scale[: self.size] = self._scale[: self.size]
        self._data, self._codes, self._scale = grown, codes, scale

    def vector(self, row: int) -> np.ndarray:
        vector: np.ndarray = self._data[row]
        return vector

    def scores(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Cosine of ``query`` with each of ``rows``: only the block up to the last row asked
        (rows come in the order first seen, so an early ``known_at`` reads a prefix)."""
        block = self._data[: int(rows.max()) + 1]
        if rows.size * GATHER_SHARE < block.shape[0]:
            return _dot(block[rows], query)
        scores: np.ndarray = _dot(block, query)[rows]
        return scores

    def rough(self, code: np.ndarray, scale: float, rows: np.ndarray) -> np.ndarray:
        """``scores`` from the int8 codes (``_code`` of the query): within about 0.002."""
        block = self._codes[: int(rows.max()) + 1]
        if rows.size * GATHER_SHARE < block.shape[0]:
            dots = _dot8(block[rows], code)
        else:
            dots = _dot8(block, code)[rows]
        rough: np.ndarray = dots * (self._scale[rows] * scale)
        return rough


def _code(vector: np.ndarray) -> tuple[np.ndarray, float]:
    """int8 codes of ``vector`` and the scale that turns them back (its largest component is 127)."""
    top = float(np.abs(vector).max())
    if top == 0.0:
        return np.zeros(vector.shape, np.int8), 0.0
    return np.rint(vector * (127.0 / top)).astype(np.int8), top / 127.0


def _dot8(codes: np.ndarray, code: np.ndarray) -> np.ndarray:
    """``codes @ code`` summed exactly in integers (simsimd's SIMD kernels, one thread: see _dot)."""
    product: np.ndarray = np.asarray(simsimd.cdist(code[None, :], codes, metric="dot", threads=1))[0]
    return product


def _dot(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``matrix @ query`` in numpy's own single-threaded loop, not BLAS: a matrix-vector product
    is bound by memory, and BLAS threads on a shared 2-core machine wait for a core (about 12 ms a
    call under load) while a serving process answers other requests on the other. Each row's
    result depends on that row alone, whatever the block's size."""
    product: np.ndarray = np.einsum("ij,j->i", matrix, query)
    return product


class VectorIndex:
    """Exact cosine search over one versioned table, masked by scope and time (see the module);
    with ``keywords`` (a weight per text column a subclass reads, ``_texts``), BM25 too
    (``keywords.Postings``), masked the same way."""

    rough_from = ROUGH_FROM  # candidates from which a semantic query takes the int8 first pass
    rescore = RESCORE  # of which at least this many are scored again exactly

    def __init__(
        self,
        table: str = "fact_versions",
        generation: str = "index_generation",
        keywords: Sequence[float] = (),
    ) -> None:
        # Names of our own tables, never user input: safe to place in the SQL below.
        self._table = table
        self._generation_counter = generation
        self._keyword_weights = tuple(keywords)
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._seq = 0
        self._generation = -1
        self._workspaces = _Codes()
        self._channels = _Codes()
        self._at = np.zeros(0, np.int64)  # version row id -> its position here, -1 if none
        self._vid = np.zeros(0, np.int64)
        self._ws = np.zeros(0, np.int32)
        self._ch = np.zeros(0, np.int32)
        # valid_from, valid_to, recorded_from, recorded_to: one contiguous row each (a scope's rows
        # are gathered from each bound alone, twice as fast as from rows of four)
        self._bounds = np.zeros((4, 0), np.int64)
        self._row = np.zeros(0, np.int32)  # row of the vector in its channel's block
        self._members: dict[int, np.ndarray] = {}  # channel code -> positions of its rows, ascending
        # channel code -> its rows' workspace and four bounds, in the order of ``_members`` (a
        # scope's visibility is then read from contiguous arrays, not gathered row by row)
        self._member_bounds: dict[int, np.ndarray] = {}
        self._member_rows: dict[int, np.ndarray] = {}  # channel code -> ``_row`` of its rows, same order
        self._blocks: dict[int, _Block] = {}  # channel code -> its vectors
        self._home: dict[str, tuple[int, int]] = {}  # embedding key -> (channel, row) first held
        self._postings = Postings(self._keyword_weights) if self._keyword_weights else None

    def refresh(self, conn: sqlite3.Connection) -> bool:
        """Pull every version row written, closed or given a vector since the last refresh;
        True if anything changed."""
        with self._lock:
            generation = conn.execute(
                "SELECT value FROM counters WHERE name = ?", (self._generation_counter,)
            ).fetchone()[0]
            reset = generation != self._generation
            if reset:
                self._reset()
                self._generation = generation
            found = conn.execute(
                f"SELECT {self._columns()} FROM {self._table} WHERE seq > ? ORDER BY seq", (self._seq,)
            )
            changed = bool(reset)
            # A slice at a time: opening a large store holds one slice of rows, not all of them.
            while rows := found.fetchmany(REFRESH_SLICE):
                self._absorb(conn, rows)
                changed = True
            return changed

    def _columns(self) -> str:
        """Columns 0-8 are what this class reads; a subclass may select more after them."""
        return "vid, workspace, channel, valid_from, valid_to, recorded_from, recorded_to, embedding_key, seq"

    def _absorb(self, conn: sqlite3.Connection, rows: list[sqlite3.Row]) -> None:
        missing = sorted({r[7] for r in rows if r[7] is not None and r[7] not in self._home})
        loaded = self._load_vectors(conn, missing) if missing else {}
        self._reserve(rows, loaded)
        fresh = [r for r in rows if self._where(r[0]) < 0]
        for r in rows:
            at = self._where(r[0])
            if at >= 0:  # a version closed, given a vector or blanked since we saw it
                self._bounds[:, at] = (r[3], r[4], r[5], r[6])
                channel = int(self._ch[at])
                inside = int(np.searchsorted(self._members[channel], at))
                self._member_bounds[channel][1:, inside] = (r[3], r[4], r[5], r[6])
                self._row[at] = self._member_rows[channel][inside] = self._place(channel, r[7], loaded)
                if self._postings is not None and not self._texts(r)[0]:
                    self._postings.drop(at)
        if fresh:
            start = len(self._vid)
            channels = [self._channels.code(r[2]) for r in fresh]
            self._vid = np.concatenate([self._vid, np.fromiter((r[0] for r in fresh), np.int64)])
            self._ws = np.concatenate(
                [self._ws, np.fromiter((self._workspaces.code(r[1]) for r in fresh), np.int32)]
            )
            self._ch = np.concatenate([self._ch, np.asarray(channels, np.int32)])
            self._bounds = np.concatenate(
                [self._bounds, np.array([(r[3], r[4], r[5], r[6]) for r in fresh], np.int64).T], axis=1
            )
            self._row = np.concatenate(
                [
                    self._row,
                    np.fromiter(
                        (self._place(c, r[7], loaded) for c, r in zip(channels, fresh, strict=True)),
                        np.int32,
                    ),
                ]
            )
            vids = self._vid[start:]
            if int(vids.max()) >= len(self._at):
                grown = np.full(max(int(vids.max()) + 1, int(len(self._at) * GROWTH)), -1, np.int64)
                grown[: len(self._at)] = self._at
                self._at = grown
            self._at[vids] = np.arange(start, len(self._vid))
            self._join_members(channels, start)
            if self._postings is not None:
                self._postings.add(start, [self._texts(r) for r in fresh], channels)
            self._absorbed(fresh, start)
        self._seq = rows[-1][8]

    def _where(self, vid: int) -> int:
        """The position of a version row, -1 if not held."""
        return int(self._at[vid]) if 0 <= vid < len(self._at) else -1

    def _positions(self, vids: np.ndarray) -> np.ndarray:
        """``_where`` of each of ``vids``."""
        out = np.full(vids.size, -1, np.int64)
        held = (vids >= 0) & (vids < len(self._at))
        out[held] = self._at[vids[held]]
        return out

    def _reserve(self, rows: list[sqlite3.Row], loaded: dict[str, np.ndarray]) -> None:
        """Room in each channel's block for the vectors just loaded (at most one per row)."""
        if not loaded:
            return
        dim = len(next(iter(loaded.values())))
        wanted = Counter(self._channels.code(r[2]) for r in rows if r[7] in loaded)
        for channel, count in wanted.items():
            self._blocks.setdefault(channel, _Block()).reserve(count, dim)

    def _place(self, channel: int, key: str | None, loaded: dict[str, np.ndarray]) -> int:
        """The row of ``key``'s vector in the channel's block (added if new there), -1 if none."""
        if key is None:
            return -1
        block = self._blocks.setdefault(channel, _Block())
        row = block.row_of.get(key)
        if row is not None:
            return row
        vector = loaded.get(key)
        if vector is None and key in self._home:
            held, at = self._home[key]
            vector = self._blocks[held].vector(at)
        if vector is None:
            return -1
        row = block.add(key, vector)
        self._home.setdefault(key, (channel, row))
        return row

    def _join_members(self, channels: list[int], start: int) -> None:
        codes = np.asarray(channels, np.int32)
        for code in np.unique(codes):
            channel = int(code)
            added = start + np.flatnonzero(codes == channel)
            bounds = np.vstack([self._ws[added].astype(np.int64)[None, :], self._bounds[:, added]])
            held = self._members.get(channel)
            if held is None:
                self._members[channel], self._member_bounds[channel] = added, bounds
                self._member_rows[channel] = self._row[added]
            else:
                self._members[channel] = np.concatenate([held, added])
                self._member_bounds[channel] = np.concatenate([self._member_bounds[channel], bounds], axis=1)
                self._member_rows[channel] = np.concatenate([self._member_rows[channel], self._row[added]])

    def _absorbed(self, fresh: list[sqlite3.Row], start: int) -> None:
        """Rows ``fresh`` now sit at positions ``start``...: a subclass keeps its own arrays."""

    def _texts(self, row: sqlite3.Row) -> tuple[str, ...]:
        """The row's text columns, one per keyword weight, the main text first (a row whose main
        text is empty is not searchable by keyword): a subclass with keywords reads them."""
        raise NotImplementedError

    def _load_vectors(self, conn: sqlite3.Connection, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for key, blob in conn.execute(
                f"SELECT key, vector FROM embeddings WHERE key IN ({marks})", chunk
            ):
                found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def search(
        self, vector: np.ndarray, scope: Scope, view: ResolvedView, limit: int, floor: float = -1.0
    ) -> list[tuple[int, float]]:
        """(version row id, cosine) of the best rows inside the scope and the view, none below
        ``floor`` (``capabilities.relevance``)."""
        with self._lock:
            if len(self._vid) == 0 or limit <= 0:
                return []
            held = self._held(self._scope_parts(scope, view))
            if not held:
                return []
            rough = sum(part.size for _, part, _ in held) >= self.rough_from  # the int8 first pass
            candidates, scores = self._scored(vector, held, rough)
            if rough:
                candidates = candidates[best_of(scores, max(self.rescore, 4 * limit))]
                scores = self._cosines(vector, candidates)
            close = scores >= floor
            candidates, scores = candidates[close], scores[close]
            if candidates.size > limit:
                top = np.argpartition(-scores, limit - 1)[:limit]
            else:
                top = np.arange(candidates.size)
            order = top[np.lexsort((self._vid[candidates[top]], -scores[top]))]
            return [(int(self._vid[candidates[i]]), float(scores[i])) for i in order]

    def _cosines(self, vector: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Cosine of each row at ``positions`` (all holding a vector) with ``vector``."""
        query = np.asarray(vector, np.float32)
        return self._per_channel(positions, lambda block, rows: block.scores(query, rows))

    def _per_channel(
        self, positions: np.ndarray, score: Callable[[_Block, np.ndarray], np.ndarray]
    ) -> np.ndarray:
        """``score`` of each channel's block and rows, put back in the order of ``positions``."""
        channels = self._ch[positions]
        first = int(channels[0]) if channels.size else 0
        if channels.size == 0 or (channels == first).all():
            return score(self._blocks[first], self._row[positions])
        out = np.empty(positions.size, np.float32)
        for channel in np.flatnonzero(np.bincount(channels)):  # the channels present (a count: no sort)
            inside = channels == channel
            out[inside] = score(self._blocks[int(channel)], self._row[positions[inside]])
        return out

    def _channel_codes(self, scope: Scope) -> list[int]:
        """The codes of the scope's channels held here, ascending."""
        return sorted({self._channels.lookup(c) for c in scope.channels} & self._members.keys())

    def _scope_parts(self, scope: Scope, view: ResolvedView) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """Per channel of the scope held here, ascending: its code, the positions (ascending) of
        its rows inside the scope and visible on both time axes of the view, and those rows'
        places in the channel's block (-1: no vector). Read from each channel's contiguous arrays;
        only the scope's channels are looked at."""
        workspace = self._workspaces.lookup(scope.workspace)
        parts = []
        for code in self._channel_codes(scope):
            keep = _inside(self._member_bounds[code], workspace, view)
            parts.append((code, self._members[code][keep], self._member_rows[code][keep]))
        return parts

    @staticmethod
    def _held(parts: list[tuple[int, np.ndarray, np.ndarray]]) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """``parts`` (``_scope_parts``) narrowed to the rows holding a vector; empty parts left out."""
        narrowed = []
        for code, positions, rows in parts:
            has = rows >= 0
            if has.any():
                narrowed.append((code, positions[has], rows[has]))
        return narrowed

    def _scored(
        self, vector: np.ndarray, held: list[tuple[int, np.ndarray, np.ndarray]], rough: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """The positions of ``held`` (``_held``), channel by channel, and each one's cosine with
        ``vector`` (``rough``: from the int8 codes, see the module): each channel's block scored
        with no mask to split the positions by channel."""
        query = np.asarray(vector, np.float32)
        if rough:
            code, scale = _code(query)
            scores = [self._blocks[channel].rough(code, scale, rows) for channel, _, rows in held]
        else:
            scores = [self._blocks[channel].scores(query, rows) for channel, _, rows in held]
        if len(held) == 1:
            return held[0][1], scores[0]
        return np.concatenate([positions for _, positions, _ in held]), np.concatenate(scores)

    def _inside(self, positions: np.ndarray, scope: Scope, view: ResolvedView) -> np.ndarray:
        """Per position: inside the scope's workspace and visible on both time axes of the view
        (the caller sees to the channels)."""
        held = [self._ws[positions], *(bound[positions] for bound in self._bounds)]
        return _inside(held, self._workspaces.lookup(scope.workspace), view)

    def keyword(self, text: str, scope: Scope, view: ResolvedView, limit: int) -> list[tuple[int, float]]:
        """(version row id, bm25) of the best ``limit`` rows inside the scope and the view holding
        any of the query's words, best first (ties: lower id first)."""
        with self._lock:
            if self._postings is None or limit <= 0:
                return []
            # Only the scope's channels' postings are read (``keywords.Postings``).
            terms = self._postings.tokenizer.query_terms(text)
            positions, scores = self._postings.scores(terms, self._channel_codes(scope))
            keep = self._inside(positions, scope, view)
            positions, scores = positions[keep], scores[keep]
            if positions.size > limit:  # the best ``limit`` and every row tied with the last
                least = np.partition(scores, positions.size - limit)[positions.size - limit]
                positions, scores = positions[scores >= least], scores[scores >= least]
            order = np.lexsort((self._vid[positions], -scores))[:limit]
            return [(int(self._vid[positions[i]]), float(scores[i])) for i in order]

    @property
    def size(self) -> int:
        return len(self._vid)


def best_of(scores: np.ndarray, count: int) -> np.ndarray:
    """Indices of the ``count`` highest ``scores`` (all of them if there are fewer), unordered
    (which of several equal scores at the edge is taken is unspecified, as with argpartition).
    Over many scores, a sample of them sets a bar that about twice ``count`` clear, and only those
    are partitioned; when fewer than ``count`` clear it, all of them are."""
    n = scores.size
    if n <= count:
        return np.arange(n)
    if n >= SAMPLED_FROM and count * 16 <= n:
        sample = scores[:: n // SAMPLE]
        above = min(sample.size - 1, 2 * count * sample.size // n + 1)
        bar = np.partition(sample, sample.size - 1 - above)[sample.size - 1 - above]
        clear = np.flatnonzero(scores >= bar)
        if count <= clear.size <= n // 4:
            chosen: np.ndarray = clear[np.argpartition(-scores[clear], count - 1)[:count]]
            return chosen
    best: np.ndarray = np.argpartition(-scores, count - 1)[:count]
    return best


def middle_of(scores: np.ndarray) -> tuple[float, float]:
    """``np.median(scores)`` exactly, and the upper of the two values it is the mean of (the one
    value when their number is odd). Over many scores, only those between two quantiles of a
    sample are partitioned, checked to hold the middle; otherwise all of them are."""
    n = scores.size
    low, high = (n - 1) // 2, n // 2  # ascending ranks of the middle value(s)
    if n >= SAMPLED_FROM:
        sample = np.sort(scores[:: n // SAMPLE])
        start, end = sample[int(sample.size * 0.4)], sample[int(sample.size * 0.6)]
        below = int(np.count_nonzero(scores < start))
        between = scores[(scores >= start) & (scores <= end)]
        if below <= low and high - below < between.size:
            return _middle(np.partition(between, [low - below, high - below]), low - below, high - below)
    return _middle(np.partition(scores, [low, high]), low, high)


def _middle(part: np.ndarray, low: int, high: int) -> tuple[float, float]:
    """What ``np.median`` makes of a partition whose middle sits at ``low`` and ``high``."""
    pair = part[[low, high]]
    return float(np.median(pair) if low != high else pair[0]), float(pair[1])


def _inside(held: Sequence[np.ndarray] | np.ndarray, workspace: int, view: ResolvedView) -> np.ndarray:
    """Per row of ``held`` (its workspace code and four bounds, one array each: valid_from,
    valid_to, recorded_from, recorded_to): inside the workspace and visible on both time axes of
    the view. The one place the semantic and keyword halves' time predicate is written."""
    ws, valid_from, valid_to, recorded_from, recorded_to = held
    keep: np.ndarray = ws == workspace
    known = to_micros(view.known_at)
    keep &= recorded_from <= known
    keep &= recorded_to > known
    if not view.include_history:
        valid = to_micros(view.valid_at)
        keep &= valid_from <= valid
        keep &= valid_to > valid
    return keep
