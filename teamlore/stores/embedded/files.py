"""Shared files in the embedded default: their state in the SQLite file, their bytes in a folder
beside it, each named by its sha256 (the same file shared twice is kept once)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path

from teamlore.errors import BackendUnavailable
from teamlore.stores.database import Database
from teamlore.stores.protocols import FileRecord, FileStatus
from teamlore.timeutil import from_micros, to_micros

_SHA = frozenset("0123456789abcdef")


class EmbeddedFileStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    def put(self, record: FileRecord) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO shared_files VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    record.workspace,
                    record.channel,
                    record.message_id,
                    record.position,
                    record.name,
                    record.sha256,
                    record.size,
                    record.status.value,
                    record.detail,
                    record.pages,
                    record.passages,
                    record.attempts,
                    to_micros(record.at),
                ),
            )

    def get(self, workspace: str, channel: str, message_id: str, position: int) -> FileRecord | None:
        row = self._db.conn.execute(
            "SELECT * FROM shared_files WHERE workspace = ? AND channel = ? AND message_id = ?"
            " AND position = ?",
            (workspace, channel, message_id, position),
        ).fetchone()
        return None if row is None else _record(row)

    def of_messages(self, workspace: str, messages: Sequence[tuple[str, str]]) -> list[FileRecord]:
        found: list[FileRecord] = []
        for channel, message_id in messages:
            rows = self._db.conn.execute(
                "SELECT * FROM shared_files WHERE workspace = ? AND channel = ? AND message_id = ?"
                " ORDER BY position",
                (workspace, channel, message_id),
            ).fetchall()
            found += [_record(r) for r in rows]
        return found

    def with_status(
        self, workspace: str, channels: Sequence[str], statuses: Collection[FileStatus]
    ) -> list[FileRecord]:
        marks, kinds = ",".join("?" * len(channels)), ",".join("?" * len(statuses))
        rows = self._db.conn.execute(
            f"SELECT * FROM shared_files WHERE workspace = ? AND channel IN ({marks})"
            f" AND status IN ({kinds}) ORDER BY channel, message_id, position",
            (workspace, *channels, *(s.value for s in statuses)),
        ).fetchall()
        return [_record(r) for r in rows]

    def forget(
        self, workspace: str, messages: Sequence[tuple[str, str]], from_position: int = 0
    ) -> list[str]:
        with self._db.transaction() as conn:
            shas: set[str] = set()
            for channel, message_id in messages:
                key = (workspace, channel, message_id, from_position)
                where = "workspace = ? AND channel = ? AND message_id = ? AND position >= ?"
                shas |= {r[0] for r in conn.execute(f"SELECT sha256 FROM shared_files WHERE {where}", key)}
                conn.execute(f"DELETE FROM shared_files WHERE {where}", key)
            return self.unreferenced(shas)

    def unreferenced(self, shas: Iterable[str]) -> list[str]:
        conn = self._db.conn
        return [
            s
            for s in sorted(set(shas))
            if s
            and conn.execute("SELECT 1 FROM shared_files WHERE sha256 = ? LIMIT 1", (s,)).fetchone() is None
        ]


def _record(r: sqlite3.Row) -> FileRecord:
    return FileRecord(
        r["workspace"],
        r["channel"],
        r["message_id"],
        r["position"],
        r["name"],
        r["sha256"],
        r["size"],
        FileStatus(r["status"]),
        r["detail"],
        r["pages"],
        r["passages"],
        r["attempts"],
        from_micros(r["at"]),
    )


class FolderBlobStore:
    """``<name>.blobs/ab/abcdef...``: written to a temporary name, then renamed (a crash leaves no
    half-written blob under its hash)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def beside(cls, db_path: Path) -> FolderBlobStore:
        return cls(db_path.with_name(db_path.stem + ".blobs"))

    def _path(self, sha256: str) -> Path:
        if len(sha256) != 64 or not set(sha256) <= _SHA:
            raise ValueError(f"not a sha256: {sha256[:80]!r}")
        return self.root / sha256[:2] / sha256

    def put(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        path = self._path(sha)
        if path.exists():
            return sha
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(f".{os.getpid()}.part")
            partial.write_bytes(data)
            os.replace(partial, path)
        except OSError as exc:
            raise BackendUnavailable(f"cannot write the file store {self.root}: {exc.strerror}") from exc
        return sha

    def get(self, sha256: str) -> bytes:
        try:
            data = self._path(sha256).read_bytes()
        except OSError as exc:
            raise BackendUnavailable(f"file {sha256[:12]} is not in {self.root}: {exc.strerror}") from exc
        if hashlib.sha256(data).hexdigest() != sha256:  # a damaged blob is never parsed
            raise BackendUnavailable(f"file {sha256[:12]} in {self.root} does not match its hash")
        return data

    def delete(self, shas: Iterable[str]) -> int:
        gone = 0
        for sha in shas:
            path = self._path(sha)
            if path.exists():
                path.unlink()
                gone += 1
        return gone
