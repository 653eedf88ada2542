"""The review queue and the tombstones in MongoDB: the same contract as the embedded store."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING

from teamlore.domain import Scope
from teamlore.stores.mongo.audit import next_number
from teamlore.stores.mongo.codec import Op, time_of, times
from teamlore.stores.mongo.journal import MISSING, WriteJournal
from teamlore.stores.mongo.runtime import Db, Document, MongoRuntime
from teamlore.stores.protocols import ReviewItem


def open_key(older_fact: str, newer_fact: str) -> str:
    """Unique among open items (one open item per pair, even with many workers); a closed
    item's key becomes "#<id>", which frees the pair for a new item."""
    return f"{older_fact}\x1f{newer_fact}"


def _item(doc: dict[str, Any]) -> ReviewItem:
    opened_at = time_of(doc, "opened_at")
    assert opened_at is not None
    return ReviewItem(
        id=doc["_id"],
        workspace=doc["workspace"],
        channel=doc["channel"],
        kind=doc["kind"],
        older_fact=doc["older_fact"],
        newer_fact=doc["newer_fact"],
        reason=doc["reason"],
        status=doc["status"],
        opened_at=opened_at,
        closed_at=time_of(doc, "closed_at"),
        reviewer=doc.get("reviewer"),
        decision=doc.get("decision"),
    )


class MongoReviewQueue:
    def __init__(self, runtime: MongoRuntime, journal: WriteJournal) -> None:
        self._rt, self._journal = runtime, journal

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
        key = open_key(older_fact, newer_fact)
        held = self._journal.pending("review_open", key)
        if held is not MISSING:
            found = None if held is None else {"_id": held}  # opened, or closed, in this transaction
        else:
            found = self._rt.run(lambda db: db["review_items"].find_one({"open_key": key}, {"_id": 1}))
        if found is not None:
            return int(found["_id"])
        item_id = next_number(self._rt, "review_items")
        doc = {
            "_id": item_id,
            "open_key": key,
            "workspace": workspace,
            "channel": channel,
            "kind": kind,
            "older_fact": older_fact,
            "newer_fact": newer_fact,
            "reason": reason,
            "status": "open",
            **times(opened_at=at, closed_at=None),
            "reviewer": None,
            "decision": None,
        }
        self._journal.write(Op("review_items", "insert_one", update=doc), ("review_open", key, item_id))
        self._journal.write(None, ("review_item", item_id, doc))
        return item_id

    def items(self, scope: Scope, status: str = "open") -> list[ReviewItem]:
        async def find(db: Db) -> list[Document]:
            query = {
                "workspace": scope.workspace,
                "channel": {"$in": sorted(scope.channels)},
                "status": status,
            }
            return await db["review_items"].find(query).sort("_id", ASCENDING).to_list()

        return [_item(d) for d in self._rt.run(find)]

    def _doc(self, item_id: int) -> dict[str, Any] | None:
        held: dict[str, Any] | None = self._journal.pending("review_item", item_id)
        if held is not MISSING:
            return held
        return self._rt.run(lambda db: db["review_items"].find_one({"_id": item_id}))

    def get(self, item_id: int) -> ReviewItem | None:
        doc = self._doc(item_id)
        return None if doc is None else _item(doc)

    def close(self, item_id: int, reviewer: str, decision: str, at: datetime) -> None:
        doc = self._doc(item_id)
        if doc is None or doc["status"] != "open":
            return
        closed = {
            **doc,
            "status": "accepted" if decision == "accept" else "rejected",
            "reviewer": reviewer,
            "decision": decision,
            "open_key": f"#{item_id}",
            **times(closed_at=at),
        }
        op = Op("review_items", "replace_one", {"_id": item_id, "status": "open"}, closed)
        self._journal.write(op, ("review_item", item_id, closed))
        self._journal.write(None, ("review_open", doc["open_key"], None))


class MongoTombstones:
    """(scope, content hash) of statements retracted: a re-import never brings them back."""

    def __init__(self, runtime: MongoRuntime, journal: WriteJournal) -> None:
        self._rt, self._journal = runtime, journal

    def add(self, workspace: str, channel: str, content_hash: str, reason: str, at: datetime) -> None:
        key = {"workspace": workspace, "channel": channel, "content_hash": content_hash}
        existing = self._rt.run(lambda db: db["tombstones"].find_one(key, {"_id": 1}))
        doc = {**key, "reason": reason, **times(at=at)}
        if existing is None:
            op = Op("tombstones", "insert_one", update={"_id": ObjectId(), **doc})
        else:
            op = Op("tombstones", "replace_one", {"_id": existing["_id"]}, doc)
        self._journal.write(op, ("tombstone", (workspace, channel, content_hash), reason))

    def forget(self, workspace: str, channel: str, content_hashes: Sequence[str]) -> None:
        for content_hash in content_hashes:
            key = {"workspace": workspace, "channel": channel, "content_hash": content_hash}
            self._journal.write(
                Op("tombstones", "delete_many", key), ("tombstone", (workspace, channel, content_hash), None)
            )

    def reason(self, workspace: str, channel: str, content_hash: str) -> str | None:
        held: str | None = self._journal.pending("tombstone", (workspace, channel, content_hash))
        if held is not MISSING:
            return held
        key = {"workspace": workspace, "channel": channel, "content_hash": content_hash}
        doc = self._rt.run(lambda db: db["tombstones"].find_one(key, {"reason": 1}))
        return None if doc is None else doc["reason"]
