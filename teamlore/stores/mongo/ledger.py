"""The event ledger in MongoDB: idempotency key -> outcome, written in the event's unit of work
(``journal``), so the key commits with the event's effects in one MongoDB transaction or not at
all. ``_id`` is the key; erasure forgets a key prefix as an ``_id`` range."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import partial

from teamlore.stores.mongo.codec import Op
from teamlore.stores.mongo.journal import MISSING, WriteJournal
from teamlore.stores.mongo.runtime import Db, Document, MongoRuntime
from teamlore.timeutil import to_micros

LEDGER = "event_ledger"
# Above every character a key can hold: [prefix, prefix + TOP) is every key starting with prefix.
TOP = "\U0010ffff"


class MongoEventLedger:
    """Applied events by idempotency key; an orphan is recorded but not "seen" (as the embedded
    ledger: a re-sent edit still applies once its message turns up)."""

    def __init__(self, runtime: MongoRuntime, journal: WriteJournal) -> None:
        self._rt, self._journal = runtime, journal

    def _outcome(self, key: str) -> str | None:
        held = self._journal.pending(LEDGER, key)
        if held is not MISSING:
            return held  # type: ignore[no-any-return]
        doc = self._rt.run(lambda db: db[LEDGER].find_one({"_id": key}, {"outcome": 1}))
        return None if doc is None else str(doc["outcome"])

    def seen(self, key: str) -> bool:
        outcome = self._outcome(key)
        return outcome is not None and outcome != "orphan"

    def record(self, key: str, outcome: str, at: datetime) -> None:
        # Times as integer microseconds: nx-27017 would store a datetime given to $set as a string.
        update = {"$set": {"outcome": outcome, "at_us": to_micros(at)}}
        op = Op(LEDGER, "update_one", {"_id": key}, update, upsert=True)
        self._journal.write(op, (LEDGER, key, outcome))

    def forget(self, prefixes: Sequence[str]) -> int:
        forgotten = 0
        for prefix in prefixes:
            where = {"_id": {"$gte": prefix, "$lt": prefix + TOP}}
            keys = set(self._rt.run(partial(_ids, where=where)))
            keys |= {k for k, v in self._journal.pending_items(LEDGER) if k.startswith(prefix) and v}
            self._journal.write(Op(LEDGER, "delete_many", where))
            for key in keys:
                self._journal.write(None, (LEDGER, key, None))
            forgotten += len(keys)
        return forgotten


async def _ids(db: Db, where: Document) -> list[str]:
    return [doc["_id"] for doc in await db[LEDGER].find(where, {"_id": 1}).to_list()]


__all__ = ["MongoEventLedger"]
