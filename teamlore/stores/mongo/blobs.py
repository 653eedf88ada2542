"""Shared files' bytes in MongoDB, laid out as GridFS (``blobs.files`` and ``blobs.chunks``), so
MongoDB's own tools (``mongofiles --prefix blobs``) and any GridFS reader see them.

Each file is named by its sha256: the files document's ``_id`` and ``filename`` are the hash,
and its chunks carry it as ``files_id``. Written by hand rather than through a GridFS bucket so
that a write is idempotent: only the chunks not yet there are inserted (their bytes are fixed by
the hash, and (``files_id``, ``n``) is unique), and the files document is written last, so a
blob is readable only once whole and a put cut short is completed by the next. Two processes
putting the same file write the same documents; a bucket's upload would instead fail on the
second and, aborting, delete the chunks the first had written. A read checks the hash,
so a torn or tampered blob is refused, never parsed. Blobs take no part in an event's
transaction (as in the embedded default's folder): one no record names is only dead weight,
and they are deleted only once the records naming them are gone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from bson.binary import Binary
from pymongo import ASCENDING
from pymongo.errors import OperationFailure

from teamlore.errors import BackendUnavailable
from teamlore.stores.mongo.runtime import Db, MongoRuntime

BUCKET = "blobs"
FILES, CHUNKS = f"{BUCKET}.files", f"{BUCKET}.chunks"
CHUNK_BYTES = 255 * 1024  # GridFS's default chunk size
_HEX = frozenset("0123456789abcdef")


def _checked(sha256: str) -> str:
    if len(sha256) != 64 or not set(sha256) <= _HEX:
        raise ValueError(f"not a sha256: {sha256[:80]!r}")
    return sha256


class MongoBlobStore:
    """``BlobStore`` on GridFS: ``put`` returns the sha256, ``get`` the bytes, ``delete`` how many
    of the named blobs were there."""

    def __init__(self, runtime: MongoRuntime) -> None:
        self._rt = runtime

    def put(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()

        async def write(db: Db) -> None:
            if await db[FILES].find_one({"_id": sha}, {"_id": 1}) is not None:
                return
            starts = range(0, max(len(data), 1), CHUNK_BYTES)
            held = {doc["n"] async for doc in db[CHUNKS].find({"files_id": sha}, {"n": 1})}
            missing = [
                {"files_id": sha, "n": n, "data": Binary(data[start : start + CHUNK_BYTES])}
                for n, start in enumerate(starts)
                if n not in held
            ]
            try:
                if missing:
                    await db[CHUNKS].insert_many(missing, ordered=False)
            except OperationFailure:
                # Another process putting the same file wrote some first: the bytes are the
                # same (the hash names them), so only a chunk that is still missing is an error.
                held = {doc["n"] async for doc in db[CHUNKS].find({"files_id": sha}, {"n": 1})}
                if len(held) < len(starts):
                    raise
            record: dict[str, Any] = {
                "_id": sha,
                "filename": sha,
                "length": len(data),
                "chunkSize": CHUNK_BYTES,
                "uploadDate": datetime.now(UTC),
            }
            try:
                await db[FILES].insert_one(record)
            except OperationFailure:
                if await db[FILES].find_one({"_id": sha}, {"_id": 1}) is None:
                    raise

        self._rt.run(write)
        return sha

    def get(self, sha256: str) -> bytes:
        sha = _checked(sha256)

        async def read(db: Db) -> bytes | None:
            record = await db[FILES].find_one({"_id": sha})
            if record is None:
                return None
            cursor = db[CHUNKS].find({"files_id": sha}, {"n": 1, "data": 1}).sort("n", ASCENDING)
            return b"".join([bytes(doc["data"]) async for doc in cursor])

        data = self._rt.run(read)
        if data is None:
            raise BackendUnavailable(f"file {sha[:12]} is not in MongoDB's {BUCKET} bucket")
        if hashlib.sha256(data).hexdigest() != sha:
            raise BackendUnavailable(f"file {sha[:12]} in MongoDB's {BUCKET} bucket does not match its hash")
        return data

    def delete(self, shas: Iterable[str]) -> int:
        wanted = sorted({_checked(sha) for sha in shas})
        if not wanted:
            return 0

        async def remove(db: Db) -> int:
            # The files documents first: a blob half deleted is unreadable, never read short.
            # One by one, each found first: a files collection's delete of an absent id is an
            # error on some servers that read it as a GridFS call (nx-27017), a no-op on MongoDB.
            present = [doc["_id"] async for doc in db[FILES].find({"_id": {"$in": wanted}}, {"_id": 1})]
            gone = 0
            for sha in present:
                try:
                    gone += (await db[FILES].delete_one({"_id": sha})).deleted_count
                except OperationFailure:
                    if await db[FILES].find_one({"_id": sha}, {"_id": 1}) is not None:
                        raise  # still there: a real refusal, not another process's delete
            await db[CHUNKS].delete_many({"files_id": {"$in": wanted}})
            return gone

        return self._rt.run(remove)


__all__ = ["BUCKET", "CHUNK_BYTES", "MongoBlobStore"]
