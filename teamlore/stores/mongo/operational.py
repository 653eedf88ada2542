"""API tokens and backfill checkpoints in MongoDB, shared by every process of the server stack.

Neither takes part in an event's transaction (a token is made or revoked by an admin; a
checkpoint is written after its page of events was delivered), so both are written straight to
MongoDB, not through the unit of work (``journal``). Documents holding times are written whole
(``codec``): a revocation replaces the document only while it is still unrevoked, so two
processes revoking at once see one ``True``.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from pymongo import ASCENDING
from pymongo.errors import DuplicateKeyError

from teamlore.errors import InvalidInput
from teamlore.stores.mongo.codec import time_of, times
from teamlore.stores.mongo.runtime import Db, MongoRuntime
from teamlore.stores.protocols import Checkpoint, TokenRecord


def _token_doc(record: TokenRecord) -> dict[str, Any]:
    return {
        "_id": record.token_id,
        "name": record.name,
        "role": record.role,
        "workspace": record.workspace,
        "channels": list(record.channels),
        "secret_sha256": record.secret_sha256,
        **times(created_at=record.created_at, revoked_at=record.revoked_at),
    }


def _token(doc: dict[str, Any]) -> TokenRecord:
    created_at = time_of(doc, "created_at")
    assert created_at is not None
    return TokenRecord(
        token_id=doc["_id"],
        name=doc["name"],
        role=doc["role"],
        workspace=doc["workspace"],
        channels=tuple(doc["channels"]),
        secret_sha256=doc["secret_sha256"],
        created_at=created_at,
        revoked_at=time_of(doc, "revoked_at"),
    )


class MongoTokenStore:
    def __init__(self, runtime: MongoRuntime) -> None:
        self._rt = runtime

    def add(self, record: TokenRecord) -> None:
        doc = _token_doc(record)

        async def insert(db: Db) -> None:
            try:
                await db["api_tokens"].insert_one(doc)
            except DuplicateKeyError:
                raise InvalidInput(f"a token with id {record.token_id} exists already") from None

        self._rt.run(insert)

    def get(self, token_id: str) -> TokenRecord | None:
        doc = self._rt.run(lambda db: db["api_tokens"].find_one({"_id": token_id}))
        return None if doc is None else _token(doc)

    def all(self, workspace: str | None = None) -> list[TokenRecord]:
        query = {} if workspace is None else {"workspace": workspace}

        async def listed(db: Db) -> list[dict[str, Any]]:
            cursor = (
                db["api_tokens"].find(query).sort([("created_at", ASCENDING), ("created_at_us", ASCENDING)])
            )
            return [doc async for doc in cursor]

        return [_token(doc) for doc in self._rt.run(listed)]

    def revoke(self, token_id: str, at: datetime) -> bool:
        async def revoked(db: Db) -> bool:
            doc = await db["api_tokens"].find_one({"_id": token_id, "revoked_at": None})
            if doc is None:
                return False
            new = _token_doc(dataclasses.replace(_token(doc), revoked_at=at))
            # Replaced only if still unrevoked: of two revocations at once, one wins.
            result = await db["api_tokens"].replace_one({"_id": token_id, "revoked_at": None}, new)
            return result.modified_count == 1

        return self._rt.run(revoked)


def checkpoint_id(platform: str, workspace: str, channel: str) -> str:
    return f"{platform}\x1f{workspace}\x1f{channel}"


class MongoCheckpointStore:
    def __init__(self, runtime: MongoRuntime) -> None:
        self._rt = runtime

    def get(self, platform: str, workspace: str, channel: str) -> Checkpoint | None:
        key = checkpoint_id(platform, workspace, channel)
        doc = self._rt.run(lambda db: db["backfill_checkpoints"].find_one({"_id": key}))
        return None if doc is None else Checkpoint(doc["cursor"], bool(doc["done"]), int(doc["fetched"]))

    def put(self, platform: str, workspace: str, channel: str, checkpoint: Checkpoint, at: datetime) -> None:
        key = checkpoint_id(platform, workspace, channel)
        doc = {
            "_id": key,
            "platform": platform,
            "workspace": workspace,
            "channel": channel,
            "cursor": checkpoint.cursor,
            "done": checkpoint.done,
            "fetched": checkpoint.fetched,
            **times(updated_at=at),
        }
        self._rt.run(lambda db: db["backfill_checkpoints"].replace_one({"_id": key}, doc, upsert=True))
