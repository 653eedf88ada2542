"""Exact cosine search over versioned rows (fact versions, message versions), held in numpy and
refreshed from the SQLite file.

Every version row is mirrored here with its scope and its four time bounds as integer arrays, so
the scope and time predicate are compiled into the semantic query as a vectorised mask, exactly as
the SQL queries compile them. Vectors are stored once per embedding key (many versions share one
statement); a query scores each distinct vector once and gathers. A row without a vector yet is
held too (``row`` -1): it is never a semantic hit, but its place in the mask is known.
"""

from __future__ import annotations

import sqlite3
import threading

import numpy as np

from teamlore.domain import ResolvedView, Scope
from teamlore.timeutil import to_micros

# Below 1/GATHER_SHARE of the vectors, a query copies the scope's rows out and multiplies those;
# above it, multiplying every vector and picking the scope's scores is cheaper (no large copy).
GATHER_SHARE = 8


class _Codes:
    """Small integer codes for workspace and channel strings."""

    def __init__(self) -> None:
        self.by_name: dict[str, int] = {}

    def code(self, name: str) -> int:
        return self.by_name.setdefault(name, len(self.by_name))

    def lookup(self, name: str) -> int:
        return self.by_name.get(name, -1)


class VectorIndex:
    def __init__(self, table: str = "fact_versions", generation: str = "index_generation") -> None:
        # Names of our own tables, never user input: safe to place in the SQL below.
        self._table = table
        self._generation_counter = generation
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._seq = 0
        self._generation = -1
        self._workspaces = _Codes()
        self._channels = _Codes()
        self._pos: dict[int, int] = {}
        self._vid = np.zeros(0, np.int64)
        self._ws = np.zeros(0, np.int32)
        self._ch = np.zeros(0, np.int32)
        self._bounds = np.zeros((0, 4), np.int64)  # valid_from, valid_to, recorded_from, recorded_to
        self._row = np.zeros(0, np.int32)  # row of the vector in _matrix
        self._keys: dict[str, int] = {}
        self._matrix = np.zeros((0, 0), np.float32)

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
            rows = conn.execute(
                f"SELECT {self._columns()} FROM {self._table} WHERE seq > ? ORDER BY seq", (self._seq,)
            ).fetchall()
            if rows:
                self._absorb(conn, rows)
            return reset or bool(rows)

    def _columns(self) -> str:
        """Columns 0-8 are what this class reads; a subclass may select more after them."""
        return (
            "vid, workspace, channel, valid_from, valid_to, recorded_from, recorded_to, embedding_key, seq"
        )

    def _absorb(self, conn: sqlite3.Connection, rows: list[sqlite3.Row]) -> None:
        missing = sorted({r[7] for r in rows if r[7] is not None and r[7] not in self._keys})
        if missing:
            self._load_vectors(conn, missing)
        fresh = [r for r in rows if r[0] not in self._pos]
        for r in rows:
            at = self._pos.get(r[0])
            if at is not None:  # a version closed, or given a vector, since we saw it
                self._bounds[at] = (r[3], r[4], r[5], r[6])
                self._row[at] = self._keys.get(r[7], -1) if r[7] is not None else -1
        if fresh:
            start = len(self._vid)
            self._vid = np.concatenate([self._vid, np.fromiter((r[0] for r in fresh), np.int64)])
            self._ws = np.concatenate(
                [self._ws, np.fromiter((self._workspaces.code(r[1]) for r in fresh), np.int32)]
            )
            self._ch = np.concatenate(
                [self._ch, np.fromiter((self._channels.code(r[2]) for r in fresh), np.int32)]
            )
            self._bounds = np.concatenate(
                [self._bounds, np.array([(r[3], r[4], r[5], r[6]) for r in fresh], np.int64)]
            )
            self._row = np.concatenate(
                [
                    self._row,
                    np.fromiter((-1 if r[7] is None else self._keys.get(r[7], -1) for r in fresh), np.int32),
                ]
            )
            for offset, r in enumerate(fresh):
                self._pos[r[0]] = start + offset
            self._absorbed(fresh, start)
        self._seq = rows[-1][8]

    def _absorbed(self, fresh: list[sqlite3.Row], start: int) -> None:
        """Rows ``fresh`` now sit at positions ``start``...: a subclass keeps its own arrays."""

    def _load_vectors(self, conn: sqlite3.Connection, keys: list[str]) -> None:
        found: list[tuple[str, np.ndarray]] = []
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for key, blob in conn.execute(
                f"SELECT key, vector FROM embeddings WHERE key IN ({marks})", chunk
            ):
                found.append((key, np.frombuffer(blob, dtype=np.float32)))
        if not found:
            return
        block = np.vstack([v for _, v in found])
        base = self._matrix.shape[0]
        self._matrix = block if base == 0 else np.vstack([self._matrix, block])
        for offset, (key, _) in enumerate(found):
            self._keys[key] = base + offset

    def search(
        self, vector: np.ndarray, scope: Scope, view: ResolvedView, limit: int, floor: float = -1.0
    ) -> list[tuple[int, float]]:
        """(version row id, cosine) of the best rows inside the scope and the view, none below
        ``floor`` (``capabilities.relevance``)."""
        with self._lock:
            if len(self._vid) == 0 or limit <= 0:
                return []
            candidates = np.flatnonzero(self._mask(scope, view) & (self._row >= 0))
            if candidates.size == 0:
                return []
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
        rows = self._row[positions]
        query = np.asarray(vector, np.float32)
        if rows.size * GATHER_SHARE < self._matrix.shape[0]:
            # A small scope: copying its rows out costs less than multiplying every vector.
            return self._matrix[rows] @ query
        return (self._matrix @ query)[rows]

    def _mask(self, scope: Scope, view: ResolvedView) -> np.ndarray:
        """Rows inside the scope and visible on both time axes of the view."""
        ws = self._workspaces.lookup(scope.workspace)
        channels = [self._channels.lookup(c) for c in scope.channels]
        mask = (self._ws == ws) & np.isin(self._ch, channels)
        known = to_micros(view.known_at)
        mask &= (self._bounds[:, 2] <= known) & (known < self._bounds[:, 3])
        if not view.include_history:
            valid = to_micros(view.valid_at)
            mask &= (self._bounds[:, 0] <= valid) & (valid < self._bounds[:, 1])
        return mask

    @property
    def size(self) -> int:
        return len(self._vid)
