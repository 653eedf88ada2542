"""The message search index in the SQLite file: every version of every message's text, searchable
by keyword (FTS5) and by vector, ranked with the conversation around it (``conversations``).

Raw queries only: scope and the time predicate are compiled into each, and nothing they return
is shown before ``teamlore.capabilities.gate.visible`` has passed it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from teamlore.dates import Period
from teamlore.domain import CONVERSATION_GAP, Message, MessageVersion, ResolvedView, Scope
from teamlore.errors import BackendUnavailable
from teamlore.stores.database import Database
from teamlore.stores.embedded.conversations import Conversations, Scores
from teamlore.stores.protocols import ErasedMessages, RawMessageHit
from teamlore.timeutil import SENTINEL_MICROS, from_micros, to_micros

_COLUMNS = (
    "vid, workspace, channel, message_id, version, thread_id, author_id, author_name, text,"
    " valid_from, recorded_from, recorded_to"
)
# Keyword matches ranked before blending: enough that a match deep in the list can still be lifted
# by its vector or its neighbours, few enough to stay cheap on a common word.
KEYWORD_POOL = 1_000


def _version(row: sqlite3.Row) -> MessageVersion:
    return MessageVersion(
        workspace=row[1],
        channel=row[2],
        message_id=row[3],
        version=row[4],
        thread_id=row[5],
        author_id=row[6],
        author_name=row[7],
        text=row[8],
        posted_at=from_micros(row[9]),
        recorded_from=from_micros(row[10]),
        recorded_to=from_micros(row[11]),
    )


class EmbeddedMessageIndex:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._memory = Conversations()

    # ---- raw queries ----

    def _keyword(
        self, text: str, scope: Scope, view: ResolvedView, limit: int, periods: Sequence[Period] = ()
    ) -> list[RawMessageHit]:
        return self._ranked(
            scope, view, Scores(self._matches(text, scope, view), None, _micros(periods)), limit
        )

    def _semantic(
        self,
        vector: np.ndarray,
        scope: Scope,
        view: ResolvedView,
        limit: int,
        periods: Sequence[Period] = (),
        floor: float = -1.0,
    ) -> list[RawMessageHit]:
        return self._ranked(scope, view, Scores(None, vector, _micros(periods), floor), limit)

    def _hybrid(
        self,
        text: str,
        vector: np.ndarray,
        scope: Scope,
        view: ResolvedView,
        limit: int,
        periods: Sequence[Period] = (),
        floor: float = -1.0,
    ) -> list[RawMessageHit]:
        keyword = self._matches(text, scope, view)
        return self._ranked(scope, view, Scores(keyword, vector, _micros(periods), floor), limit)

    def _matches(self, text: str, scope: Scope, view: ResolvedView) -> dict[int, float]:
        """Version row id -> bm25 of the best KEYWORD_POOL matches visible in the scope and view,
        best first (ranked in memory, ``keywords``)."""
        self._refresh()
        return dict(self._memory.keyword(text, scope, view, KEYWORD_POOL))

    def _ranked(self, scope: Scope, view: ResolvedView, scores: Scores, limit: int) -> list[RawMessageHit]:
        self._refresh()
        ranked = self._memory.rank(scope, view, scores, limit)
        if not ranked:
            return []
        marks = ",".join("?" * len(ranked))
        rows = self._query(
            f"SELECT {_COLUMNS} FROM message_versions WHERE vid IN ({marks})", [vid for vid, _ in ranked]
        )
        by_vid = {r[0]: r for r in rows}
        return [RawMessageHit(_version(by_vid[vid]), score) for vid, score in ranked if vid in by_vid]

    def warm(self) -> int:
        """Load the in-memory index now rather than at the first search; the rows it holds."""
        self._refresh()
        return self._memory.size

    def _refresh(self) -> None:
        try:
            self._memory.refresh(self._db.conn)
        except sqlite3.Error as exc:
            raise BackendUnavailable(f"message index refresh failed: {exc}") from exc

    def _query(self, sql: str, params: Sequence[object]) -> list[sqlite3.Row]:
        try:
            return self._db.conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise BackendUnavailable(f"message index query failed: {exc}") from exc

    def export_versions(self, after_vid: int, limit: int) -> list[tuple[int, MessageVersion, str | None]]:
        """Every version in write order, a page at a time: (row id, version, embedding key). For
        copying the index elsewhere (``teamlore weaviate load-messages``), never for readers."""
        rows = self._query(
            f"SELECT {_COLUMNS}, embedding_key FROM message_versions WHERE vid > ? ORDER BY vid LIMIT ?",
            [after_vid, limit],
        )
        return [(r[0], _version(r), r["embedding_key"]) for r in rows]

    # ---- the pipeline's own lookups: a message's neighbours in its conversation (current text) ----

    def before(
        self, workspace: str, channel: str, message_id: str, thread_id: str | None, posted: datetime
    ) -> MessageVersion | None:
        """The message said just before this one in its conversation: the previous reply (or,
        for a first reply, the thread's opening message), or the previous top-level message
        within ``CONVERSATION_GAP``."""
        spot = _Spot(workspace, channel, message_id, thread_id, posted)
        found = self._neighbour(spot, before=True)
        if found is None and spot.reply:
            return self.current(workspace, channel, thread_id or "")
        return found

    def after(
        self, workspace: str, channel: str, message_id: str, thread_id: str | None, posted: datetime
    ) -> list[MessageVersion]:
        """The messages said just after this one: the next in its conversation and, for a
        thread's opening message, the thread's first reply."""
        spot = _Spot(workspace, channel, message_id, thread_id, posted)
        found = [self._neighbour(spot, before=False)]
        if not spot.reply:
            first = self._query(
                f"SELECT {_COLUMNS} FROM message_versions WHERE workspace = ? AND channel = ?"
                " AND recorded_to = ? AND thread_id = ? AND message_id != thread_id AND text != ''"
                " ORDER BY valid_from, message_id LIMIT 1",
                [workspace, channel, SENTINEL_MICROS, message_id],
            )
            found += [_version(r) for r in first]
        return [v for v in found if v is not None]

    def current(self, workspace: str, channel: str, message_id: str) -> MessageVersion | None:
        rows = self._query(
            f"SELECT {_COLUMNS} FROM message_versions WHERE workspace = ? AND channel = ?"
            " AND message_id = ? AND recorded_to = ? AND text != ''",
            [workspace, channel, message_id, SENTINEL_MICROS],
        )
        return _version(rows[0]) if rows else None

    def _neighbour(self, spot: _Spot, before: bool) -> MessageVersion | None:
        posted = to_micros(spot.posted)
        sql = [
            f"SELECT {_COLUMNS} FROM message_versions WHERE workspace = ? AND channel = ?"
            " AND recorded_to = ? AND text != '' AND message_id != ?"
        ]
        params: list[object] = [spot.workspace, spot.channel, SENTINEL_MICROS, spot.message_id]
        if spot.reply:
            sql.append("AND thread_id = ? AND message_id != thread_id")
            params.append(spot.thread_id)
        else:
            gap = int(CONVERSATION_GAP.total_seconds() * 1_000_000)
            sql.append("AND (thread_id IS NULL OR thread_id = message_id) AND valid_from BETWEEN ? AND ?")
            params += [posted - gap, posted] if before else [posted, posted + gap]
        if before:
            sql.append("AND (valid_from < ? OR (valid_from = ? AND message_id < ?))")
            sql.append("ORDER BY valid_from DESC, message_id DESC LIMIT 1")
        else:
            sql.append("AND (valid_from > ? OR (valid_from = ? AND message_id > ?))")
            sql.append("ORDER BY valid_from, message_id LIMIT 1")
        params += [posted, posted, spot.message_id]
        rows = self._query(" ".join(sql), params)
        return _version(rows[0]) if rows else None

    # ---- writes ----

    def set_vector(self, workspace: str, channel: str, message_id: str, embedding_key: str | None) -> None:
        """Give the current version a new vector (its context changed); the old vector goes unless
        something else still uses it."""
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT vid, embedding_key FROM message_versions WHERE workspace = ? AND channel = ?"
                " AND message_id = ? AND recorded_to = ?",
                (workspace, channel, message_id, SENTINEL_MICROS),
            ).fetchone()
            if row is None or row["embedding_key"] == embedding_key:
                return
            conn.execute(
                "UPDATE message_versions SET embedding_key = ?, seq = ? WHERE vid = ?",
                (embedding_key, self._db.next_seq("message_seq"), row["vid"]),
            )
            old = row["embedding_key"]
            if old is not None and not _still_used(conn, old):
                conn.execute("DELETE FROM embeddings WHERE key = ?", (old,))

    def put(self, message: Message, text: str, at: datetime, embedding_key: str | None) -> bool:
        """Make ``text`` the current indexed version of ``message`` (a new version if the text
        changed, the old one closed at ``at``); True if a version was written."""
        with self._db.transaction() as conn:
            current = conn.execute(
                "SELECT vid, version, text, embedding_key FROM message_versions WHERE workspace = ?"
                " AND channel = ? AND message_id = ? AND recorded_to = ?",
                (message.workspace, message.channel, message.message_id, SENTINEL_MICROS),
            ).fetchone()
            if current is not None and current["text"] == text:
                if embedding_key is not None:
                    self.set_vector(message.workspace, message.channel, message.message_id, embedding_key)
                return False
            if current is not None:
                self._close(conn, current["vid"], at)
            conn.execute(
                "INSERT INTO message_versions (workspace, channel, message_id, version, thread_id,"
                " author_id, author_name, text, valid_from, valid_to, recorded_from, recorded_to,"
                " embedding_key, seq) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    message.workspace,
                    message.channel,
                    message.message_id,
                    1 if current is None else current["version"] + 1,
                    message.thread_id,
                    message.author_id,
                    message.author_name,
                    text,
                    to_micros(message.ts),
                    SENTINEL_MICROS,
                    to_micros(at),
                    SENTINEL_MICROS,
                    embedding_key,
                    self._db.next_seq("message_seq"),
                ),
            )
            return True

    def withdraw(self, workspace: str, channel: str, message_id: str, at: datetime) -> None:
        """A deleted message: its current version closes at ``at`` and every version loses its
        text, index rows and vector."""
        with self._db.transaction() as conn:
            rows = conn.execute(
                "SELECT vid, recorded_to FROM message_versions WHERE workspace = ? AND channel = ?"
                " AND message_id = ?",
                (workspace, channel, message_id),
            ).fetchall()
            for row in rows:
                if row["recorded_to"] == SENTINEL_MICROS:
                    self._close(conn, row["vid"], at)
            self._blank(conn, [row["vid"] for row in rows])

    def erase_author(self, workspace: str, author_id: str) -> ErasedMessages:
        """Blank every version of every message the person wrote. The in-memory index is rebuilt
        from the file on its next query."""
        with self._db.transaction() as conn:
            vids = [
                r[0]
                for r in conn.execute(
                    "SELECT vid FROM message_versions WHERE workspace = ? AND author_id = ?",
                    (workspace, author_id),
                )
            ]
            vectors = self._blank(conn, vids)
            conn.execute(
                "UPDATE message_versions SET author_name = '' WHERE vid IN (SELECT value FROM json_each(?))",
                (_json_ids(vids),),
            )
            conn.execute("UPDATE counters SET value = value + 1 WHERE name = 'message_index_generation'")
            erased = conn.execute(
                f"SELECT {_COLUMNS} FROM message_versions WHERE workspace = ? AND author_id = ?"
                " AND recorded_to = ?",
                (workspace, author_id, SENTINEL_MICROS),
            ).fetchall()
        return ErasedMessages(vectors, tuple(_version(r) for r in erased))

    def _close(self, conn: sqlite3.Connection, vid: int, at: datetime) -> None:
        conn.execute(
            "UPDATE message_versions SET recorded_to = ?, seq = ? WHERE vid = ?",
            (to_micros(at), self._db.next_seq("message_seq"), vid),
        )

    def _blank(self, conn: sqlite3.Connection, vids: Sequence[int]) -> int:
        """Delete the text and vectors of these versions (a vector still used by a
        fact or another message stays); returns how many vectors were deleted."""
        vectors = 0
        for vid in vids:
            row = conn.execute("SELECT embedding_key FROM message_versions WHERE vid = ?", (vid,)).fetchone()
            conn.execute(
                "UPDATE message_versions SET text = '', embedding_key = NULL, seq = ? WHERE vid = ?",
                (self._db.next_seq("message_seq"), vid),
            )
            key = row["embedding_key"]
            if key is not None and not _still_used(conn, key):
                vectors += conn.execute("DELETE FROM embeddings WHERE key = ?", (key,)).rowcount
        return vectors


@dataclass(frozen=True, slots=True)
class _Spot:
    """A message's place in its conversation."""

    workspace: str
    channel: str
    message_id: str
    thread_id: str | None
    posted: datetime

    @property
    def reply(self) -> bool:
        return self.thread_id is not None and self.thread_id != self.message_id


def _micros(periods: Sequence[Period]) -> tuple[tuple[int, int], ...]:
    return tuple((to_micros(start), to_micros(end)) for start, end in periods)


def _still_used(conn: sqlite3.Connection, key: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM message_versions WHERE embedding_key = ? LIMIT 1", (key,)).fetchone()
        is not None
        or conn.execute("SELECT 1 FROM fact_versions WHERE embedding_key = ? LIMIT 1", (key,)).fetchone()
        is not None
    )


def _json_ids(vids: Sequence[int]) -> str:
    return "[" + ",".join(str(int(v)) for v in vids) + "]"
