"""Raw messages and channels in SQLite: the source of truth facts cite and re-indexing reads."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from teamlore.domain import (
    Attachment,
    AttachmentKind,
    Channel,
    MediaReference,
    Message,
    Scope,
    Source,
    Visibility,
)
from teamlore.stores.database import Database
from teamlore.timeutil import from_micros, to_micros


def _maybe_time(micros: int | None) -> datetime | None:
    return None if micros is None else from_micros(micros)


class EmbeddedMessageStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    def put_channel(self, channel: Channel) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO channels VALUES (?,?,?,?,?) ON CONFLICT (workspace, channel) DO UPDATE"
                " SET name = excluded.name, visibility = excluded.visibility"
                " WHERE excluded.name != '' ",
                (
                    channel.workspace,
                    channel.channel,
                    channel.name,
                    channel.visibility.value,
                    channel.platform,
                ),
            )

    def channels(self, workspace: str) -> list[Channel]:
        rows = self._db.conn.execute(
            "SELECT * FROM channels WHERE workspace = ? ORDER BY name, channel", (workspace,)
        ).fetchall()
        return [
            Channel(r["workspace"], r["channel"], r["name"], Visibility(r["visibility"]), r["platform"])
            for r in rows
        ]

    def get_message(self, workspace: str, channel: str, message_id: str) -> Message | None:
        r = self._db.conn.execute(
            "SELECT * FROM messages WHERE workspace = ? AND channel = ? AND message_id = ?",
            (workspace, channel, message_id),
        ).fetchone()
        return None if r is None else _row_message(r)

    def by_permalink(self, workspace: str, channel: str, permalinks: Sequence[str]) -> dict[str, str]:
        """Permalink -> message id, for the permalinks of this channel's stored messages."""
        wanted = sorted(set(permalinks))
        if not wanted:
            return {}
        rows = self._db.conn.execute(
            "SELECT permalink, message_id FROM messages WHERE workspace = ? AND channel = ?"
            f" AND permalink IN ({','.join('?' * len(wanted))})",
            (workspace, channel, *wanted),
        ).fetchall()
        return {r[0]: r[1] for r in rows}

    def thread(self, workspace: str, channel: str, thread_id: str, limit: int = 200) -> list[Message]:
        """A thread's opening message and its replies, oldest first (deleted ones included)."""
        rows = self._db.conn.execute(
            "SELECT * FROM messages WHERE workspace = ? AND channel = ? AND (thread_id = ? OR message_id = ?)"
            " ORDER BY ts, message_id LIMIT ?",
            (workspace, channel, thread_id, thread_id, limit),
        ).fetchall()
        return [_row_message(r) for r in rows]

    def put_message(self, message: Message, recorded_at: datetime) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO messages VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT (workspace, channel, message_id) DO UPDATE SET"
                " text = excluded.text, content_hash = excluded.content_hash,"
                " edited_at = excluded.edited_at, thread_id = excluded.thread_id",
                (
                    message.workspace,
                    message.channel,
                    message.message_id,
                    message.platform,
                    message.thread_id,
                    message.author_id,
                    message.author_name,
                    to_micros(message.ts),
                    message.text,
                    message.permalink,
                    message.content_hash,
                    None if message.edited_at is None else to_micros(message.edited_at),
                    None if message.deleted_at is None else to_micros(message.deleted_at),
                    to_micros(recorded_at),
                    message.shared_in,
                    message.file_ref,
                ),
            )

    def mark_deleted(self, workspace: str, channel: str, message_id: str, at: datetime) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                "UPDATE messages SET deleted_at = ?, text = '' WHERE workspace = ? AND channel = ?"
                " AND message_id = ? AND deleted_at IS NULL",
                (to_micros(at), workspace, channel, message_id),
            )
            conn.execute(
                "DELETE FROM message_attachments WHERE workspace = ? AND channel = ? AND message_id = ?",
                (workspace, channel, message_id),
            )

    def put_attachments(
        self, workspace: str, channel: str, message_id: str, attachments: Sequence[Attachment]
    ) -> None:
        """Replace the message's attachments with these."""
        with self._db.transaction() as conn:
            conn.execute(
                "DELETE FROM message_attachments WHERE workspace = ? AND channel = ? AND message_id = ?",
                (workspace, channel, message_id),
            )
            conn.executemany(
                "INSERT INTO message_attachments VALUES (?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        workspace,
                        channel,
                        message_id,
                        n,
                        a.name,
                        a.mime_type,
                        a.kind.value,
                        a.size,
                        a.url,
                        a.download_url,
                    )
                    for n, a in enumerate(attachments)
                ],
            )

    def _media_references(
        self, scope: Scope, words: Sequence[str], kind: AttachmentKind | None, limit: int
    ) -> list[MediaReference]:
        """Attachments of live messages in the scope whose name or mime type holds every word."""
        channels = sorted(scope.channels)
        sql = [
            "SELECT a.*, m.thread_id, m.author_name, m.ts, m.permalink FROM message_attachments a"
            " JOIN messages m USING (workspace, channel, message_id)"
            f" WHERE a.workspace = ? AND a.channel IN ({','.join('?' * len(channels))})"
            " AND m.deleted_at IS NULL"
        ]
        args: list[object] = [scope.workspace, *channels]
        for word in words:
            sql.append(r"AND (a.name LIKE ? ESCAPE '\' OR a.mime_type LIKE ? ESCAPE '\')")
            pattern = "%" + word.replace("\\", "\\\\").replace("%", r"\%").replace("_", r"\_") + "%"
            args += [pattern, pattern]
        if kind is not None:
            sql.append("AND a.kind = ?")
            args.append(kind.value)
        sql.append("ORDER BY m.ts DESC, a.message_id, a.position LIMIT ?")
        rows = self._db.conn.execute(" ".join(sql), (*args, limit)).fetchall()
        return [
            MediaReference(
                r["workspace"],
                r["channel"],
                r["message_id"],
                r["thread_id"],
                r["author_name"],
                from_micros(r["ts"]),
                r["permalink"],
                r["name"],
                r["mime_type"],
                AttachmentKind(r["kind"]),
                r["size"],
                r["url"],
                r["position"],
            )
            for r in rows
        ]

    def attachments(self, workspace: str, channel: str, message_id: str) -> list[Attachment]:
        """The message's attachments in the order it shared them."""
        rows = self._db.conn.execute(
            "SELECT * FROM message_attachments WHERE workspace = ? AND channel = ? AND message_id = ?"
            " ORDER BY position",
            (workspace, channel, message_id),
        ).fetchall()
        return [
            Attachment(
                name=r["name"],
                mime_type=r["mime_type"],
                size=r["size"],
                url=r["url"],
                download_url=r["download_url"],
            )
            for r in rows
        ]

    def passages_of(self, workspace: str, channel: str, message_id: str) -> list[str]:
        """The live messages that are passages of files this message shared, by id."""
        rows = self._db.conn.execute(
            "SELECT message_id FROM messages WHERE workspace = ? AND channel = ? AND shared_in = ?"
            " AND deleted_at IS NULL ORDER BY message_id",
            (workspace, channel, message_id),
        ).fetchall()
        return [r[0] for r in rows]

    def sources(self, workspace: str, channel: str, message_ids: Sequence[str]) -> dict[str, Source]:
        if not message_ids:
            return {}
        marks = ",".join("?" * len(message_ids))
        rows = self._db.conn.execute(
            "SELECT message_id, author_id, author_name, ts, permalink, deleted_at, file_ref, shared_in"
            f" FROM messages WHERE workspace = ? AND channel = ? AND message_id IN ({marks})",
            (workspace, channel, *message_ids),
        ).fetchall()
        return {
            r[0]: Source(r[0], r[1], r[2], from_micros(r[3]), r[4], _maybe_time(r[5]), r[6], r[7])
            for r in rows
        }

    def live_messages(self, workspace: str, channel: str, after: str, limit: int) -> list[Message]:
        """Stored, not deleted messages of a channel in message-id order, after ``after``."""
        rows = self._db.conn.execute(
            "SELECT message_id FROM messages WHERE workspace = ? AND channel = ? AND message_id > ?"
            " AND deleted_at IS NULL ORDER BY message_id LIMIT ?",
            (workspace, channel, after, limit),
        ).fetchall()
        found = [self.get_message(workspace, channel, r[0]) for r in rows]
        return [m for m in found if m is not None]

    def live_between(self, workspace: str, channel: str, since: datetime, until: datetime) -> list[Message]:
        rows = self._db.conn.execute(
            "SELECT message_id FROM messages WHERE workspace = ? AND channel = ? AND ts >= ? AND ts < ?"
            " AND deleted_at IS NULL ORDER BY ts, message_id",
            (workspace, channel, to_micros(since), to_micros(until)),
        ).fetchall()
        found = [self.get_message(workspace, channel, r[0]) for r in rows]
        return [m for m in found if m is not None]

    def authored(self, workspace: str, author_id: str) -> list[tuple[str, str]]:
        rows = self._db.conn.execute(
            "SELECT channel, message_id FROM messages WHERE workspace = ? AND author_id = ?"
            " ORDER BY channel, message_id",
            (workspace, author_id),
        ).fetchall()
        return [(r[0], r[1]) for r in rows]

    def erase_author(self, workspace: str, author_id: str, at: datetime) -> None:
        with self._db.transaction() as conn:
            # File names can be personal data too: the person's attachments go with their text.
            conn.execute(
                "DELETE FROM message_attachments WHERE (workspace, channel, message_id) IN (SELECT"
                " workspace, channel, message_id FROM messages WHERE workspace = ? AND author_id = ?)",
                (workspace, author_id),
            )
            conn.execute(
                "UPDATE messages SET text = '', author_name = '', content_hash = '', file_ref = '',"
                " deleted_at = coalesce(deleted_at, ?) WHERE workspace = ? AND author_id = ?",
                (to_micros(at), workspace, author_id),
            )

    def replies(self, workspace: str, channel: str, thread_id: str) -> list[Message]:
        rows = self._db.conn.execute(
            "SELECT message_id FROM messages WHERE workspace = ? AND channel = ? AND thread_id = ?"
            " AND message_id != thread_id AND deleted_at IS NULL ORDER BY ts, message_id",
            (workspace, channel, thread_id),
        ).fetchall()
        found = [self.get_message(workspace, channel, r[0]) for r in rows]
        return [m for m in found if m is not None]

    def author_names(self, workspace: str) -> frozenset[str]:
        rows = self._db.conn.execute(
            "SELECT DISTINCT lower(author_name) FROM messages WHERE workspace = ? AND author_name != ''",
            (workspace,),
        ).fetchall()
        return frozenset(r[0] for r in rows)


class EmbeddedEmbeddingCache:
    """Passage vectors by cache key (model + text hash), float32 blobs."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get_vectors(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for i in range(0, len(keys), 500):
            chunk = list(keys[i : i + 500])
            marks = ",".join("?" * len(chunk))
            for key, blob in self._db.conn.execute(
                f"SELECT key, vector FROM embeddings WHERE key IN ({marks})", chunk
            ):
                found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def forget(self, keys: Sequence[str]) -> int:
        """Delete these vectors (an erasure); returns how many there were."""
        with self._db.transaction() as conn:
            return sum(conn.execute("DELETE FROM embeddings WHERE key = ?", (k,)).rowcount for k in keys)

    def put_vectors(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        with self._db.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO embeddings VALUES (?, ?, ?, ?)",
                [
                    (k, model, int(v.shape[-1]), np.asarray(v, np.float32).tobytes())
                    for k, v in vectors.items()
                ],
            )


class EmbeddedEventLedger:
    """Applied events by idempotency key. An orphan (an edit whose message never came) is recorded
    but not "seen": if its message turns up later, a re-sent edit still applies."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def seen(self, key: str) -> bool:
        row = self._db.conn.execute("SELECT outcome FROM event_ledger WHERE key = ?", (key,)).fetchone()
        return row is not None and row[0] != "orphan"

    def record(self, key: str, outcome: str, at: datetime) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO event_ledger VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE"
                " SET outcome = excluded.outcome, at = excluded.at",
                (key, outcome, to_micros(at)),
            )

    def forget(self, prefixes: Sequence[str]) -> int:
        with self._db.transaction() as conn:
            return sum(
                conn.execute(
                    "DELETE FROM event_ledger WHERE substr(key, 1, ?) = ?", (len(prefix), prefix)
                ).rowcount
                for prefix in prefixes
            )


def _row_message(r: sqlite3.Row) -> Message:
    return Message(
        platform=r["platform"],
        workspace=r["workspace"],
        channel=r["channel"],
        message_id=r["message_id"],
        thread_id=r["thread_id"],
        author_id=r["author_id"],
        author_name=r["author_name"],
        ts=from_micros(r["ts"]),
        text=r["text"],
        permalink=r["permalink"],
        content_hash=r["content_hash"],
        edited_at=_maybe_time(r["edited_at"]),
        deleted_at=_maybe_time(r["deleted_at"]),
        shared_in=r["shared_in"],
        file_ref=r["file_ref"],
    )
