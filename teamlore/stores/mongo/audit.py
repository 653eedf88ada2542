"""The append-only audit log as a MongoDB collection.

The code only ever inserts; ``_id`` is a sequence number taken from ``counters`` when the
event is appended, so a replayed insert meets its own earlier copy and is dropped. Which events
name a fact is kept in ``audit_facts`` (fact id, seq), scalar and indexed, rather than an
index on the ``fact_ids`` array: nx-27017 answers nothing for an indexed array field. On a real
deployment give Teamlore's database user no update or delete right on ``audit_log`` to make
the log append-only for everyone (docs/architecture.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pymongo import ASCENDING, DESCENDING, ReturnDocument

from teamlore.stores.mongo.codec import Op, time_of, times
from teamlore.stores.mongo.journal import WriteJournal
from teamlore.stores.mongo.runtime import Db, Document, MongoRuntime
from teamlore.stores.protocols import AuditEvent


def next_number(runtime: MongoRuntime, name: str) -> int:
    """The next value of a counter. Taken at once, outside any transaction: a rollback leaves a
    gap, never a number used twice."""
    doc = runtime.run(
        lambda db: db["counters"].find_one_and_update(
            {"_id": name}, {"$inc": {"value": 1}}, upsert=True, return_document=ReturnDocument.AFTER
        )
    )
    assert doc is not None  # upserted
    return int(doc["value"])


class MongoAuditLog:
    def __init__(self, runtime: MongoRuntime, journal: WriteJournal) -> None:
        self._rt, self._journal = runtime, journal

    def append(self, event: AuditEvent) -> int:
        seq = next_number(self._rt, "audit_log")
        doc = {
            "_id": seq,
            **times(at=event.at),
            "event": event.event,
            "actor": event.actor,
            "reason": event.reason,
            "workspace": event.workspace,
            "channel": event.channel,
            "fact_ids": list(event.fact_ids),
            "content_hashes": list(event.content_hashes),
            # Through JSON, as the embedded log stores it: the same details read back from both.
            "details": json.loads(json.dumps(event.details, sort_keys=True)),
        }
        self._journal.write(Op("audit_log", "insert_one", update=doc))
        for fact_id in dict.fromkeys(event.fact_ids):
            link = {"_id": f"{fact_id}\x1f{seq}", "fact_id": fact_id, "seq": seq}
            self._journal.write(Op("audit_facts", "insert_one", update=link))
        return seq

    def events_for_fact(self, fact_id: str) -> list[AuditEvent]:
        async def find(db: Db) -> list[Document]:
            links = await db["audit_facts"].find({"fact_id": fact_id}, {"seq": 1}).to_list()
            seqs = [link["seq"] for link in links]
            return await db["audit_log"].find({"_id": {"$in": seqs}}).sort("_id", ASCENDING).to_list()

        return [_event(d) for d in self._rt.run(find)]

    def recent(
        self,
        workspace: str,
        channels: Iterable[str],
        since: datetime,
        limit: int,
        before: int | None = None,
        after: int | None = None,
    ) -> list[AuditEvent]:
        """As the embedded log: newest first, paged by sequence number (exclusive bounds)."""
        edge = times(at=since)
        query: dict[str, Any] = {
            "workspace": workspace,
            "channel": {"$in": sorted(set(channels))},
            "$or": [{"at": {"$gt": edge["at"]}}, {"at": edge["at"], "at_us": {"$gte": edge["at_us"]}}],
        }
        seq: dict[str, int] = {}
        if before is not None:
            seq["$lt"] = before
        if after is not None:
            seq["$gt"] = after
        if seq:
            query["_id"] = seq
        ascending = after is not None and before is None

        async def find(db: Db) -> list[Document]:
            order = ASCENDING if ascending else DESCENDING
            return await db["audit_log"].find(query).sort("_id", order).limit(limit).to_list()

        events = [_event(d) for d in self._rt.run(find)]
        return events[::-1] if ascending else events


def _event(d: Document) -> AuditEvent:
    at = time_of(d, "at")
    assert at is not None
    return AuditEvent(
        event=d["event"],
        actor=d["actor"],
        reason=d["reason"],
        at=at,
        workspace=d["workspace"],
        channel=d["channel"],
        fact_ids=tuple(d["fact_ids"]),
        content_hashes=tuple(d["content_hashes"]),
        details=d["details"],
        seq=d["_id"],
    )
