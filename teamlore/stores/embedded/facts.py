"""Fact versions in SQLite: raw queries with scope and time compiled in, audited writes."""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from teamlore.domain import Fact, FactStatus, FactType, ResolvedView, Scope
from teamlore.errors import BackendUnavailable
from teamlore.stores.database import Database
from teamlore.stores.embedded import subjects
from teamlore.stores.embedded.vector_index import VectorIndex
from teamlore.stores.protocols import RRF_K, AuditEvent, AuditLog, ConcurrentChange, RawHit, Related
from teamlore.timeutil import SENTINEL_MICROS, from_micros, to_micros

_COLUMNS = (
    "vid, fact_id, version, workspace, channel, thread_id, statement, content_hash, fact_type,"
    " entities, topic, importance, confidence, status, evidence, valid_from, valid_to,"
    " recorded_from, recorded_to, supersedes, superseded_by, origin, due_at"
)
_V_COLUMNS = ", ".join(f"v.{c.strip()}" for c in _COLUMNS.split(","))


def scope_time_sql(
    scope: Scope, view: ResolvedView, alias: str = "v", by_id: bool = False
) -> tuple[str, list[object]]:
    """The WHERE clause every raw query carries: scope, transaction time, valid time. ``by_id``:
    the query names its rows by id, so the scope columns must not steer the planner to the scope
    index (a unary plus keeps them out of index choice; the filter is the same)."""
    channels = sorted(scope.channels)
    known = to_micros(view.known_at)
    plus = "+" if by_id else ""
    sql = (
        f"{plus}{alias}.workspace = ? AND {plus}{alias}.channel IN ({','.join('?' * len(channels))})"
        f" AND {alias}.recorded_from <= ? AND ? < {plus}{alias}.recorded_to"
    )
    params: list[object] = [scope.workspace, *channels, known, known]
    if not view.include_history:
        valid = to_micros(view.valid_at)
        sql += f" AND {alias}.valid_from <= ? AND ? < {alias}.valid_to"
        params += [valid, valid]
    return sql, params


class FactIndex(VectorIndex):
    """The fact versions' vectors, and their words for keyword ranking: the statement, the
    entities at half weight, the channel (length only), ranked as FTS5's bm25 would rank them."""

    def __init__(self) -> None:
        super().__init__(keywords=(1.0, 0.5, 0.0))

    def _columns(self) -> str:
        return super()._columns() + ", statement, entities"

    def _texts(self, row: sqlite3.Row) -> tuple[str, ...]:
        return (row[9], " ".join(json.loads(row[10])), row[2])


# Lookups for the columns a read converts most (a read hydrates every version of a chain):
# a dict finds an enum member faster than calling the enum.
_TYPES = {member.value: member for member in FactType}
_STATUSES = {member.value: member for member in FactStatus}


def _row_to_fact(row: sqlite3.Row | tuple[Any, ...]) -> Fact:
    return Fact(
        fact_id=row[1],
        version=row[2],
        workspace=row[3],
        channel=row[4],
        thread_id=row[5],
        statement=row[6],
        content_hash=row[7],
        fact_type=_TYPES[row[8]],
        entities=_tuple(row[9]),
        topic=row[10],
        importance=row[11],
        confidence=row[12],
        status=_STATUSES[row[13]],
        evidence=_tuple(row[14]),
        valid_from=from_micros(row[15]),
        valid_to=from_micros(row[16]),
        recorded_from=from_micros(row[17]),
        recorded_to=from_micros(row[18]),
        supersedes=_tuple(row[19]),
        superseded_by=row[20],
        origin=row[21],
        due_at=None if row[22] is None else from_micros(row[22]),
    )


def _tuple(text: str) -> tuple[str, ...]:
    """A JSON list column as a tuple; the empty list, common on the read path, without parsing."""
    return () if text == "[]" else _parsed(text)


@functools.lru_cache(maxsize=1 << 16)
def _parsed(text: str) -> tuple[str, ...]:
    # A pure function of the text: the same evidence and entity lists are read again and again
    # (every version of a fact, every search that finds it).
    return tuple(json.loads(text))


class EmbeddedFactBackend:
    def __init__(self, db: Database, audit: AuditLog) -> None:
        self._db = db
        self._audit = audit
        self._index = FactIndex()
        with db.transaction() as conn:
            subjects.build_once(conn)

    # ---- raw queries (private: only the read path above calls them, then gates the rows) ----

    def _query(self, sql: str, params: Sequence[object]) -> list[sqlite3.Row]:
        try:
            return self._db.conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise BackendUnavailable(f"embedded fact store query failed: {exc}") from exc

    def warm(self) -> int:
        """Load the in-memory index now rather than at the first search; the rows it holds."""
        try:
            self._index.refresh(self._db.conn)
        except sqlite3.Error as exc:
            raise BackendUnavailable(f"embedded fact index refresh failed: {exc}") from exc
        return self._index.size

    def _keyword(self, text: str, scope: Scope, view: ResolvedView, limit: int) -> list[RawHit]:
        # Ranked in memory (``keywords``): FTS5's bm25() scans every match and every phrase.
        self._index.refresh(self._db.conn)
        return self._hits(self._index.keyword(text, scope, view, limit))

    def _semantic(
        self, vector: np.ndarray, scope: Scope, view: ResolvedView, limit: int, floor: float = -1.0
    ) -> list[RawHit]:
        self._index.refresh(self._db.conn)
        return self._hits(self._index.search(vector, scope, view, limit, floor))

    def _hits(self, ranked: list[tuple[int, float]]) -> list[RawHit]:
        if not ranked:
            return []
        by_vid = {r[0]: r for r in self._rows_by_vid([vid for vid, _ in ranked])}
        return [RawHit(_row_to_fact(by_vid[vid]), score) for vid, score in ranked if vid in by_vid]

    def _hybrid(
        self,
        text: str,
        vector: np.ndarray,
        scope: Scope,
        view: ResolvedView,
        limit: int,
        floor: float = -1.0,
    ) -> list[RawHit]:
        self._index.refresh(self._db.conn)
        keyword = self._index.keyword(text, scope, view, limit)
        semantic = self._index.search(vector, scope, view, limit, floor)
        # Both rankings' rows in one read; only the fused best become facts.
        wanted = list(dict.fromkeys(vid for vid, _ in (*keyword, *semantic)))
        rows = {r[0]: r for r in self._rows_by_vid(wanted)} if wanted else {}
        fused: dict[str, float] = {}
        row_of: dict[str, sqlite3.Row] = {}
        for ranked in (keyword, semantic):
            for rank, vid in enumerate(vid for vid, _ in ranked if vid in rows):
                row = rows[vid]
                key = f"{row[1]}#{row[2]}"
                fused[key] = fused.get(key, 0.0) + 1.0 / (RRF_K + rank + 1)
                row_of[key] = row
        order = sorted(fused, key=lambda key: (-fused[key], key))[:limit]
        return [RawHit(_row_to_fact(row_of[key]), fused[key]) for key in order]

    def _list(self, scope: Scope, view: ResolvedView, limit: int) -> list[RawHit]:
        where, params = scope_time_sql(scope, view)
        rows = self._query(
            f"SELECT {_V_COLUMNS} FROM fact_versions v WHERE {where}"
            " ORDER BY v.valid_from DESC, v.vid DESC LIMIT ?",
            [*params, limit],
        )
        return [RawHit(_row_to_fact(r), 0.0) for r in rows]

    def _by_ids(self, fact_ids: Sequence[str], scope: Scope, view: ResolvedView) -> list[RawHit]:
        if not fact_ids:
            return []
        where, params = scope_time_sql(scope, view, by_id=True)
        marks = ",".join("?" * len(fact_ids))
        rows = self._query(
            f"SELECT {_V_COLUMNS} FROM fact_versions v WHERE v.fact_id IN ({marks}) AND {where}",
            [*fact_ids, *params],
        )
        return [RawHit(_row_to_fact(r), 0.0) for r in rows]

    def _following(
        self, fact_ids: Sequence[str], scope: Scope, view: ResolvedView, steps: int
    ) -> list[RawHit]:
        if not fact_ids:
            return []
        where, params = scope_time_sql(scope, view, by_id=True)
        rows = self._query(
            "WITH RECURSIVE chain(fact_id, step) AS (SELECT value, 0 FROM json_each(?)"
            " UNION SELECT v.superseded_by, chain.step + 1 FROM chain JOIN fact_versions v"
            f" ON v.fact_id = chain.fact_id WHERE chain.step < ? AND v.superseded_by IS NOT NULL AND {where})"
            f" SELECT {_V_COLUMNS} FROM fact_versions v"
            f" WHERE v.fact_id IN (SELECT fact_id FROM chain) AND {where}",
            [json.dumps(list(fact_ids)), steps, *params, *params],
        )
        return [RawHit(_row_to_fact(r), 0.0) for r in rows]

    def _versions(self, fact_id: str, scope: Scope) -> list[Fact]:
        channels = sorted(scope.channels)
        rows = self._query(
            f"SELECT {_V_COLUMNS} FROM fact_versions v WHERE v.fact_id = ? AND v.workspace = ?"
            f" AND v.channel IN ({','.join('?' * len(channels))}) ORDER BY v.version",
            [fact_id, scope.workspace, *channels],
        )
        return [_row_to_fact(r) for r in rows]

    def _rows_by_vid(self, vids: Sequence[int]) -> list[sqlite3.Row]:
        marks = ",".join("?" * len(vids))
        return self._query(f"SELECT {_COLUMNS} FROM fact_versions WHERE vid IN ({marks})", list(vids))

    # ---- the write path's own lookups ----

    def current_version(self, fact_id: str) -> Fact | None:
        rows = self._query(
            f"SELECT {_COLUMNS} FROM fact_versions WHERE fact_id = ? AND recorded_to = ?",
            [fact_id, SENTINEL_MICROS],
        )
        return _row_to_fact(rows[0]) if rows else None

    def current_by_hash(self, workspace: str, channel: str, content_hash: str) -> Fact | None:
        rows = self._query(
            f"SELECT {_COLUMNS} FROM fact_versions WHERE workspace = ? AND channel = ?"
            " AND content_hash = ? AND recorded_to = ? AND status != 'retracted'"
            " ORDER BY valid_from DESC LIMIT 1",
            [workspace, channel, content_hash, SENTINEL_MICROS],
        )
        return _row_to_fact(rows[0]) if rows else None

    def current_citing(self, workspace: str, channel: str, message_id: str) -> list[Fact]:
        rows = self._query(
            f"SELECT {_V_COLUMNS} FROM fact_evidence e JOIN fact_versions v"
            " ON v.fact_id = e.fact_id AND v.recorded_to = ?"
            " WHERE e.workspace = ? AND e.channel = ? AND e.message_id = ? ORDER BY v.vid",
            [SENTINEL_MICROS, workspace, channel, message_id],
        )
        return [_row_to_fact(r) for r in rows]

    def current_citing_any(self, workspace: str, channel: str, message_ids: Sequence[str]) -> list[Fact]:
        """Current versions of the facts citing any of these messages, each once."""
        if not message_ids:
            return []
        marks = ",".join("?" * len(message_ids))
        rows = self._query(
            f"SELECT DISTINCT {_V_COLUMNS} FROM fact_evidence e JOIN fact_versions v"
            " ON v.fact_id = e.fact_id AND v.recorded_to = ?"
            f" WHERE e.workspace = ? AND e.channel = ? AND e.message_id IN ({marks}) ORDER BY v.vid",
            [SENTINEL_MICROS, workspace, channel, *message_ids],
        )
        return [_row_to_fact(r) for r in rows]

    def current_related(self, workspace: str, channel: str, text: str, limit: int) -> list[Related]:
        """Current, not retired facts of one channel sharing words or entities with ``text``;
        light rows (the resolver needs only these), best keyword match first. Only that
        channel's current facts are read (``subjects``): the cost does not grow with history or
        with other channels."""
        match = subjects.match(workspace, channel, text)
        if match is None:
            return []
        # Ranked inside FTS5 first (its own best ``limit``), then joined: every row of the table
        # is a current, open version of that channel, so the join keeps them all. Should one not
        # be (a row left behind: the outer join shows it as NULL), the ranking is done again over
        # the join, as it always was.
        rows = self._query(
            "WITH best AS MATERIALIZED (SELECT rowid AS vid, bm25(fact_subjects) AS rank"
            " FROM fact_subjects WHERE fact_subjects MATCH ? ORDER BY rank, rowid LIMIT ?)"
            " SELECT v.fact_id, v.statement, v.valid_from, v.fact_type, v.origin FROM best"
            " LEFT JOIN fact_versions v ON v.vid = best.vid AND v.workspace = ? AND v.channel = ?"
            " AND v.recorded_to = ? AND v.status IN ('active', 'contested')"
            " ORDER BY best.rank, best.vid",
            [match, limit, workspace, channel, SENTINEL_MICROS],
        )
        if any(r[0] is None for r in rows):
            rows = self._query(
                "SELECT v.fact_id, v.statement, v.valid_from, v.fact_type, v.origin"
                " FROM fact_subjects s JOIN fact_versions v ON v.vid = s.rowid"
                " WHERE fact_subjects MATCH ? AND v.workspace = ? AND v.channel = ? AND v.recorded_to = ?"
                " AND v.status IN ('active', 'contested')"
                " ORDER BY bm25(fact_subjects), v.vid LIMIT ?",
                [match, workspace, channel, SENTINEL_MICROS, limit],
            )
        return [Related(r[0], r[1], from_micros(r[2]), r[3], r[4]) for r in rows]

    def current_near(
        self, workspace: str, channel: str, vector: np.ndarray, limit: int, window: int
    ) -> list[Related]:
        """The ``limit`` facts closest to ``vector`` among the ``window`` most recently written
        current, not retired facts of one channel; light rows, closest first. It walks the
        channel's index of current rows from the newest: the cost does not grow with the store."""
        rows = self._query(
            "SELECT v.fact_id, v.statement, v.valid_from, v.fact_type, v.origin, e.vector"
            " FROM fact_versions v INDEXED BY fact_versions_current_recent"
            " JOIN embeddings e ON e.key = v.embedding_key"
            # The open bound written out, as the partial index names it (a parameter would
            # keep the planner off the index).
            f" WHERE v.workspace = ? AND v.channel = ? AND v.recorded_to = {SENTINEL_MICROS}"
            " AND v.status IN ('active', 'contested') ORDER BY v.vid DESC LIMIT ?",
            [workspace, channel, window],
        )
        query = np.asarray(vector, np.float32)
        rows = [r for r in rows if len(r[5]) == query.nbytes]  # (a vector of another model: skip)
        if not rows:
            return []
        matrix = np.vstack([np.frombuffer(r[5], dtype=np.float32) for r in rows])
        scores = matrix @ query
        order = sorted(range(len(rows)), key=lambda i: (-scores[i], i))[:limit]
        return [
            Related(rows[i][0], rows[i][1], from_micros(rows[i][2]), rows[i][3], rows[i][4]) for i in order
        ]

    def current_ids(self, workspace: str, channel: str) -> list[str]:
        rows = self._query(
            "SELECT fact_id FROM fact_versions WHERE workspace = ? AND channel = ? AND recorded_to = ?"
            " ORDER BY fact_id",
            [workspace, channel, SENTINEL_MICROS],
        )
        return [r[0] for r in rows]

    def embedding_key(self, fact_id: str) -> str | None:
        """The embedding key of the fact's latest version, or None."""
        row = self._db.conn.execute(
            "SELECT embedding_key FROM fact_versions WHERE fact_id = ? ORDER BY version DESC LIMIT 1",
            (fact_id,),
        ).fetchone()
        return row[0] if row else None

    def export_versions(self, after_vid: int, limit: int) -> list[tuple[int, Fact, str | None]]:
        """Every version in write order, a page at a time: (row id, version, embedding key).
        For copying the store elsewhere (``teamlore weaviate load-facts``), never for readers."""
        rows = self._query(
            f"SELECT {_COLUMNS}, embedding_key FROM fact_versions WHERE vid > ? ORDER BY vid LIMIT ?",
            [after_vid, limit],
        )
        return [(r[0], _row_to_fact(r), r["embedding_key"]) for r in rows]

    # ---- writes ----

    def erase_text(self, fact_ids: Sequence[str]) -> int:
        """Delete the text (and its hash) of every version of these facts, their index rows and
        their vectors (a vector another fact still uses stays); return how many vectors were
        deleted."""
        conn = self._db.conn
        vectors = 0
        for fact_id in fact_ids:
            rows = conn.execute(
                "SELECT vid, embedding_key FROM fact_versions WHERE fact_id = ?", (fact_id,)
            ).fetchall()
            for vid, key in rows:
                subjects.drop(conn, vid)
                shared = conn.execute(
                    "SELECT 1 FROM fact_versions WHERE embedding_key = ? AND fact_id NOT IN"
                    f" ({','.join('?' * len(fact_ids))}) LIMIT 1",
                    (key, *fact_ids),
                ).fetchone()
                if key is not None and shared is None:
                    vectors += conn.execute("DELETE FROM embeddings WHERE key = ?", (key,)).rowcount
            conn.execute(
                "UPDATE fact_versions SET statement = '', entities = '[]', topic = '', content_hash = '',"
                " embedding_key = NULL WHERE fact_id = ?",
                (fact_id,),
            )
        # The vector index drops what it holds and reloads from the file on its next query.
        conn.execute("UPDATE counters SET value = value + 1 WHERE name = 'index_generation'")
        return vectors

    def write_version(
        self, new: Fact, replaces: Fact | None, audit: AuditEvent, embedding_key: str | None = None
    ) -> Fact:
        """Close ``replaces`` (if given) and write ``new`` as the current version, with its audit."""
        try:
            self._write(new, replaces, audit, embedding_key)
        except sqlite3.Error as exc:
            raise BackendUnavailable(f"embedded fact store write failed: {exc}") from exc
        return new

    def _write(self, new: Fact, replaces: Fact | None, audit: AuditEvent, embedding_key: str | None) -> None:
        with self._db.transaction() as conn:
            now = to_micros(new.recorded_from)
            if replaces is not None:
                closed = conn.execute(
                    "UPDATE fact_versions SET recorded_to = ?, seq = ?"
                    " WHERE fact_id = ? AND version = ? AND recorded_to = ? RETURNING vid",
                    (now, self._db.next_seq(), replaces.fact_id, replaces.version, SENTINEL_MICROS),
                ).fetchall()
                if len(closed) != 1:
                    raise ConcurrentChange(
                        f"fact {replaces.fact_id} v{replaces.version} is no longer current"
                    )
                subjects.drop(conn, closed[0][0])
                if embedding_key is None:
                    embedding_key = self.embedding_key(replaces.fact_id)
                conn.execute("DELETE FROM fact_evidence WHERE fact_id = ?", (replaces.fact_id,))
            vid = conn.execute(
                "INSERT INTO fact_versions (fact_id, version, workspace, channel, thread_id,"
                " statement, content_hash, fact_type, entities, topic, importance, confidence,"
                " status, evidence, valid_from, valid_to, recorded_from, recorded_to, supersedes,"
                " superseded_by, origin, due_at, embedding_key, seq)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    new.fact_id,
                    new.version,
                    new.workspace,
                    new.channel,
                    new.thread_id,
                    new.statement,
                    new.content_hash,
                    new.fact_type.value,
                    json.dumps(list(new.entities)),
                    new.topic,
                    new.importance,
                    new.confidence,
                    new.status.value,
                    json.dumps(list(new.evidence)),
                    to_micros(new.valid_from),
                    to_micros(new.valid_to),
                    now,
                    to_micros(new.recorded_to),
                    json.dumps(list(new.supersedes)),
                    new.superseded_by,
                    new.origin,
                    None if new.due_at is None else to_micros(new.due_at),
                    embedding_key,
                    self._db.next_seq(),
                ),
            ).lastrowid
            if new.status.value in subjects.OPEN and vid is not None:
                subjects.add(conn, vid, new.workspace, new.channel, new.statement, new.entities)
            conn.executemany(
                "INSERT OR IGNORE INTO fact_evidence VALUES (?, ?, ?, ?)",
                [(new.workspace, new.channel, mid, new.fact_id) for mid in new.evidence],
            )
            self._audit.append(audit)
