"""The model spend ledger, the breakers' last states and the model cache in MongoDB, shared by
every process of the server stack.

Written straight to MongoDB, not through the unit of work (``journal``): none is part of an event's
effects. A model call made for an event that then rolls back was still made and paid for, so
its spend stays counted (the embedded ledger, inside the file's transaction, loses that line);
counts are ``$inc``, so processes adding at once never lose one another's. The cache is shared
rather than per process so that workers do not pay twice for one prompt and so that erasure's
``clear`` reaches the output every process kept (it may quote the erased person).
"""

from __future__ import annotations

from typing import Any

from pymongo import ASCENDING

from teamlore.stores.mongo.codec import time_of, times
from teamlore.stores.mongo.runtime import Db, MongoRuntime
from teamlore.stores.protocols import BreakerRow, SpendRow

_COUNTS = ("calls", "failures", "fallbacks", "rejected", "cache_hits", "prompt_tokens", "completion_tokens")


def _key(*parts: str) -> str:
    return "\x1f".join(parts)


class MongoSpendLedger:
    def __init__(self, runtime: MongoRuntime) -> None:
        self._rt = runtime

    def record(self, row: SpendRow) -> None:
        counts = {name: getattr(row, name) for name in _COUNTS}
        self._rt.run(
            lambda db: db["llm_spend"].update_one(
                {"_id": _key(row.role, row.model)},
                {"$inc": counts, "$setOnInsert": {"role": row.role, "model": row.model}},
                upsert=True,
            )
        )

    def totals(self) -> list[SpendRow]:
        async def listed(db: Db) -> list[dict[str, Any]]:
            cursor = db["llm_spend"].find({}).sort([("role", ASCENDING), ("model", ASCENDING)])
            return [doc async for doc in cursor]

        return [
            SpendRow(doc["role"], doc["model"], **{name: int(doc.get(name, 0)) for name in _COUNTS})
            for doc in self._rt.run(listed)
        ]

    def set_breaker(self, row: BreakerRow) -> None:
        doc = {
            "_id": row.role,
            "state": row.state,
            "failures": row.failures,
            **times(changed_at=row.changed_at, retry_at=row.retry_at),
        }
        self._rt.run(lambda db: db["llm_breakers"].replace_one({"_id": row.role}, doc, upsert=True))

    def breakers(self) -> list[BreakerRow]:
        async def listed(db: Db) -> list[dict[str, Any]]:
            return [doc async for doc in db["llm_breakers"].find({}).sort("_id", ASCENDING)]

        rows = []
        for doc in self._rt.run(listed):
            changed_at = time_of(doc, "changed_at")
            assert changed_at is not None
            rows.append(
                BreakerRow(doc["_id"], doc["state"], doc["failures"], changed_at, time_of(doc, "retry_at"))
            )
        return rows


class MongoModelCache:
    def __init__(self, runtime: MongoRuntime) -> None:
        self._rt = runtime

    def get(self, key: str) -> str | None:
        doc = self._rt.run(lambda db: db["llm_cache"].find_one({"_id": key}, {"value": 1}))
        return None if doc is None else str(doc["value"])

    def put(self, key: str, role: str, model: str, value: str) -> None:
        doc = {"_id": key, "role": role, "model": model, "value": value}
        self._rt.run(lambda db: db["llm_cache"].replace_one({"_id": key}, doc, upsert=True))

    def clear(self) -> int:
        async def cleared(db: Db) -> int:
            return (await db["llm_cache"].delete_many({})).deleted_count

        return self._rt.run(cleared)
