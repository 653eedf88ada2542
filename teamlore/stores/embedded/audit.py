"""The append-only audit log in SQLite (triggers refuse UPDATE and DELETE)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from datetime import datetime

from teamlore.stores.database import Database
from teamlore.stores.protocols import AuditEvent
from teamlore.timeutil import from_micros, to_micros


class EmbeddedAuditLog:
    def __init__(self, db: Database) -> None:
        self._db = db

    def append(self, event: AuditEvent) -> int:
        with self._db.transaction() as conn:
            seq = conn.execute(
                "INSERT INTO audit_log (at, event, actor, reason, workspace, channel, fact_ids,"
                " content_hashes, details) VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    to_micros(event.at),
                    event.event,
                    event.actor,
                    event.reason,
                    event.workspace,
                    event.channel,
                    json.dumps(list(event.fact_ids)),
                    json.dumps(list(event.content_hashes)),
                    json.dumps(event.details, sort_keys=True),
                ),
            ).lastrowid
            assert seq is not None  # set by every INSERT
            conn.executemany(
                "INSERT OR IGNORE INTO audit_fact VALUES (?, ?)",
                [(fact_id, seq) for fact_id in event.fact_ids],
            )
        return int(seq)

    def events_for_fact(self, fact_id: str) -> list[AuditEvent]:
        rows = self._db.conn.execute(
            "SELECT a.* FROM audit_fact f JOIN audit_log a ON a.seq = f.seq"
            " WHERE f.fact_id = ? ORDER BY a.seq",
            (fact_id,),
        ).fetchall()
        return [_event(r) for r in rows]

    def recent(
        self,
        workspace: str,
        channels: Iterable[str],
        since: datetime,
        limit: int,
        before: int | None = None,
        after: int | None = None,
    ) -> list[AuditEvent]:
        """Events in these channels at or after ``since``, newest first. ``before`` / ``after``
        (sequence numbers, exclusive) page through them: the ``limit`` events just older than
        ``before``, or just newer than ``after``."""
        chosen = sorted(set(channels))
        sql = (
            "SELECT * FROM audit_log WHERE workspace = ? AND channel IN"
            f" ({','.join('?' * len(chosen))}) AND at >= ?"
        )
        params: list[object] = [workspace, *chosen, to_micros(since)]
        if before is not None:
            sql, params = sql + " AND seq < ?", [*params, before]
        if after is not None:
            sql, params = sql + " AND seq > ?", [*params, after]
        order = "ASC" if after is not None and before is None else "DESC"
        rows = self._db.conn.execute(f"{sql} ORDER BY seq {order} LIMIT ?", (*params, limit)).fetchall()
        events = [_event(r) for r in rows]
        return events[::-1] if order == "ASC" else events


def _event(r: sqlite3.Row) -> AuditEvent:
    return AuditEvent(
        event=r["event"],
        actor=r["actor"],
        reason=r["reason"],
        at=from_micros(r["at"]),
        workspace=r["workspace"],
        channel=r["channel"],
        fact_ids=tuple(json.loads(r["fact_ids"])),
        content_hashes=tuple(json.loads(r["content_hashes"])),
        details=json.loads(r["details"]),
        seq=r["seq"],
    )
