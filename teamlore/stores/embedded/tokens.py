"""Small operational records in SQLite: API tokens (hashes only) and backfill checkpoints."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime

from teamlore.stores.database import Database
from teamlore.stores.protocols import Checkpoint, TokenRecord
from teamlore.timeutil import from_micros, to_micros


class EmbeddedTokenStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, record: TokenRecord) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO api_tokens VALUES (?,?,?,?,?,?,?,?)",
                (
                    record.token_id,
                    record.name,
                    record.role,
                    record.workspace,
                    json.dumps(list(record.channels)),
                    record.secret_sha256,
                    to_micros(record.created_at),
                    None if record.revoked_at is None else to_micros(record.revoked_at),
                ),
            )

    def get(self, token_id: str) -> TokenRecord | None:
        row = self._db.conn.execute("SELECT * FROM api_tokens WHERE token_id = ?", (token_id,)).fetchone()
        return None if row is None else _record(row)

    def all(self, workspace: str | None = None) -> list[TokenRecord]:
        if workspace is None:
            rows = self._db.conn.execute("SELECT * FROM api_tokens ORDER BY created_at").fetchall()
        else:
            rows = self._db.conn.execute(
                "SELECT * FROM api_tokens WHERE workspace = ? ORDER BY created_at", (workspace,)
            ).fetchall()
        return [_record(r) for r in rows]

    def revoke(self, token_id: str, at: datetime) -> bool:
        with self._db.transaction() as conn:
            changed = conn.execute(
                "UPDATE api_tokens SET revoked_at = ? WHERE token_id = ? AND revoked_at IS NULL",
                (to_micros(at), token_id),
            ).rowcount
        return changed == 1


def _record(row: sqlite3.Row) -> TokenRecord:
    return TokenRecord(
        token_id=row["token_id"],
        name=row["name"],
        role=row["role"],
        workspace=row["workspace"],
        channels=tuple(json.loads(row["channels"])),
        secret_sha256=row["secret_sha256"],
        created_at=from_micros(row["created_at"]),
        revoked_at=None if row["revoked_at"] is None else from_micros(row["revoked_at"]),
    )


class EmbeddedCheckpointStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, platform: str, workspace: str, channel: str) -> Checkpoint | None:
        row = self._db.conn.execute(
            "SELECT cursor, done, fetched FROM backfill_checkpoints"
            " WHERE platform = ? AND workspace = ? AND channel = ?",
            (platform, workspace, channel),
        ).fetchone()
        return None if row is None else Checkpoint(row[0], bool(row[1]), row[2])

    def put(self, platform: str, workspace: str, channel: str, checkpoint: Checkpoint, at: datetime) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO backfill_checkpoints VALUES (?,?,?,?,?,?,?) ON CONFLICT"
                " (platform, workspace, channel) DO UPDATE SET cursor = excluded.cursor,"
                " done = excluded.done, fetched = excluded.fetched, updated_at = excluded.updated_at",
                (
                    platform,
                    workspace,
                    channel,
                    checkpoint.cursor,
                    int(checkpoint.done),
                    checkpoint.fetched,
                    to_micros(at),
                ),
            )
