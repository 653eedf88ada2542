"""The review queue and the tombstones, in the embedded SQLite file."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from teamlore.domain import Scope
from teamlore.stores.database import Database
from teamlore.stores.protocols import ReviewItem
from teamlore.timeutil import from_micros, to_micros


def _item(row: sqlite3.Row) -> ReviewItem:
    return ReviewItem(
        id=row["id"],
        workspace=row["workspace"],
        channel=row["channel"],
        kind=row["kind"],
        older_fact=row["older_fact"],
        newer_fact=row["newer_fact"],
        reason=row["reason"],
        status=row["status"],
        opened_at=from_micros(row["opened_at"]),
        closed_at=None if row["closed_at"] is None else from_micros(row["closed_at"]),
        reviewer=row["reviewer"],
        decision=row["decision"],
    )


class EmbeddedReviewQueue:
    def __init__(self, db: Database) -> None:
        self._db = db

    def open(
        self,
        workspace: str,
        channel: str,
        kind: str,
        older_fact: str,
        newer_fact: str,
        reason: str,
        at: datetime,
    ) -> int:
        with self._db.transaction() as conn:
            found = conn.execute(
                "SELECT id FROM review_items WHERE older_fact = ? AND newer_fact = ? AND status = 'open'",
                (older_fact, newer_fact),
            ).fetchone()
            if found:
                return int(found[0])
            opened = conn.execute(
                "INSERT INTO review_items (workspace, channel, kind, older_fact, newer_fact, reason,"
                " opened_at) VALUES (?,?,?,?,?,?,?)",
                (workspace, channel, kind, older_fact, newer_fact, reason, to_micros(at)),
            ).lastrowid
            assert opened is not None  # set by every INSERT
            return opened

    def items(self, scope: Scope, status: str = "open") -> list[ReviewItem]:
        channels = sorted(scope.channels)
        rows = self._db.conn.execute(
            f"SELECT * FROM review_items WHERE workspace = ? AND channel IN ({','.join('?' * len(channels))})"
            " AND status = ? ORDER BY id",
            (scope.workspace, *channels, status),
        ).fetchall()
        return [_item(r) for r in rows]

    def get(self, item_id: int) -> ReviewItem | None:
        row = self._db.conn.execute("SELECT * FROM review_items WHERE id = ?", (item_id,)).fetchone()
        return None if row is None else _item(row)

    def close(self, item_id: int, reviewer: str, decision: str, at: datetime) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                "UPDATE review_items SET status = ?, reviewer = ?, decision = ?, closed_at = ?"
                " WHERE id = ? AND status = 'open'",
                (
                    "accepted" if decision == "accept" else "rejected",
                    reviewer,
                    decision,
                    to_micros(at),
                    item_id,
                ),
            )


class EmbeddedTombstones:
    """(scope, content hash) of statements retracted: a re-import never brings them back."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, workspace: str, channel: str, content_hash: str, reason: str, at: datetime) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO tombstones VALUES (?,?,?,?,?) ON CONFLICT (workspace, channel, content_hash)"
                " DO UPDATE SET reason = excluded.reason, at = excluded.at",
                (workspace, channel, content_hash, reason, to_micros(at)),
            )

    def forget(self, workspace: str, channel: str, content_hashes: Sequence[str]) -> None:
        with self._db.transaction() as conn:
            conn.executemany(
                "DELETE FROM tombstones WHERE workspace = ? AND channel = ? AND content_hash = ?",
                [(workspace, channel, h) for h in content_hashes],
            )

    def reason(self, workspace: str, channel: str, content_hash: str) -> str | None:
        row = self._db.conn.execute(
            "SELECT reason FROM tombstones WHERE workspace = ? AND channel = ? AND content_hash = ?",
            (workspace, channel, content_hash),
        ).fetchone()
        return None if row is None else row[0]
