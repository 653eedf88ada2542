"""The server stack's unit of work: MongoDB writes held in memory, committed in one MongoDB
transaction.

Facts and the message index live in Weaviate; messages, the audit log, tombstones, review items,
pages, the routing index, the event ledger and shared files' records in MongoDB. The pipeline
reads a stored message and the ledger to decide whether an event was already applied, so a
message that reached MongoDB while its facts rolled back would make a re-delivery skip facts that
were never written. Hence:

- ``transaction()`` opens a unit (nested: a savepoint when asked, else part of the enclosing
  one). A write made inside it is held in memory, per level: a savepoint that rolls back drops
  its writes; an outer unit that raises drops them all, and MongoDB never sees them.
- When the outermost unit ends, its writes are applied in order inside one MongoDB transaction
  (a session: ``startTransaction`` ... ``commitTransaction``; MongoDB retries it on a transient
  conflict), so they reach MongoDB all together or not at all, the ledger's keys with them.
- A unit may be fenced (``fenced``): before its writes, the transaction raises each channel's
  fence in ``channel_fences`` to the caller's token from the channel lock
  (``stores.redis.channel_lock``), which only succeeds while no newer token has been recorded.
  A worker whose lease ran out while it worked (paused, then woke up) finds a newer holder's
  token there: its commit is refused (``LeaseLost``) and nothing it held is written.
- A write made outside any unit opens one of its own, which commits at once.

Reads inside an open unit see this thread's held writes for the point lookups the pipeline makes
in the same unit (``pending``), and what a read found is kept for later reads in it
(``remember``): the channel lock keeps other workers off the channel meanwhile.

Older Teamlore kept these writes in an outbox table of the SQLite file (``mongo_outbox``) and
applied them after each file commit; ``replay_outbox`` applies what such a file still holds, once,
when a process opens the stores beside it (``stores.with_mongo.adopt_file``).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Hashable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pymongo import DeleteMany, InsertOne, ReplaceOne, UpdateMany, UpdateOne
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import BulkWriteError, DuplicateKeyError

from teamlore.errors import LeaseLost
from teamlore.stores.mongo.codec import Op
from teamlore.stores.mongo.runtime import Db, Document, MongoRuntime

MISSING: Any = object()
DUPLICATE_KEY = 11000
FENCES = "channel_fences"


@dataclass(slots=True)
class Level:
    """What one level of a unit (the outermost, or a savepoint) holds."""

    ops: list[Op] = field(default_factory=list)
    # What a read inside the unit should see: (namespace, key) -> value.
    overlay: dict[tuple[str, Hashable], object] = field(default_factory=dict)


class WriteJournal:
    """Holds MongoDB writes inside a unit of work and commits them in one MongoDB transaction
    (see the module)."""

    def __init__(self, runtime: MongoRuntime) -> None:
        self._runtime = runtime
        self._local = threading.local()

    @property
    def _levels(self) -> list[Level]:
        levels = getattr(self._local, "levels", None)
        if levels is None:
            levels = self._local.levels = []
        return levels

    @property
    def _fences(self) -> dict[str, int]:
        fences = getattr(self._local, "fences", None)
        if fences is None:
            fences = self._local.fences = {}
        return fences

    @contextmanager
    def transaction(self, savepoint: bool = False) -> Iterator[None]:
        """A unit of work; inside one, a savepoint when asked (a failure then drops only its own
        writes), else simply part of the enclosing unit."""
        levels = self._levels
        if levels and not savepoint:
            yield
            return
        depth = len(levels)
        levels.append(Level())
        try:
            yield
        except BaseException:
            del levels[depth:]
            raise
        inner = levels.pop()
        if depth:
            levels[-1].ops.extend(inner.ops)
            levels[-1].overlay.update(inner.overlay)
            return
        if inner.ops:
            fences = dict(self._fences)
            self._runtime.run(lambda db: _commit(db, inner.ops, fences))

    @contextmanager
    def fenced(self, fences: Mapping[str, int]) -> Iterator[None]:
        """Units committed on this thread inside the block check and raise these fences (a
        channel's key -> its lock's token) in their transaction (see the module)."""
        held = self._fences
        before = dict(held)
        held.update(fences)
        try:
            yield
        finally:
            held.clear()
            held.update(before)

    def write(self, op: Op | None, overlay: tuple[str, Hashable, object] | None = None) -> None:
        """Hold ``op`` until the enclosing unit commits (open one if there is none). ``op`` None
        records only an overlay (a value a read in this unit must see)."""
        with self.transaction():
            level = self._levels[-1]
            if op is not None:
                level.ops.append(op)
            if overlay is not None:
                level.overlay[overlay[:2]] = overlay[2]

    def remember(self, namespace: str, key: Hashable, value: object) -> None:
        """Keep what a read inside a unit found, for later reads in it."""
        if self._levels:
            self._levels[-1].overlay[(namespace, key)] = value

    def pending(self, namespace: str, key: Hashable) -> Any:
        """The latest held value for ``key`` in this thread's open unit, else MISSING."""
        for level in reversed(self._levels):
            found = level.overlay.get((namespace, key), MISSING)
            if found is not MISSING:
                return found
        return MISSING

    def pending_items(self, namespace: str) -> Iterator[tuple[Any, Any]]:
        merged: dict[tuple[str, Hashable], object] = {}
        for level in self._levels:
            merged.update(level.overlay)
        return ((key, value) for (ns, key), value in merged.items() if ns == namespace)


async def _commit(db: Db, ops: list[Op], fences: dict[str, int]) -> None:
    async with db.client.start_session() as session:

        async def body(session: AsyncClientSession) -> None:
            for key, token in sorted(fences.items()):
                await _raise_fence(db, key, token, session)
            await _apply(db, ops, session)

        await session.with_transaction(body)


async def _raise_fence(db: Db, key: str, token: int, session: AsyncClientSession) -> None:
    """Record ``token`` as the channel's fence unless a newer one is recorded (then the upsert
    meets the existing document under its ``_id`` and is refused as a duplicate)."""
    try:
        await db[FENCES].update_one(
            {"_id": key, "fence": {"$lte": token}}, {"$set": {"fence": token}}, upsert=True, session=session
        )
    except DuplicateKeyError:
        raise LeaseLost(
            f"the channel lock {key[:12]} passed to another worker (token {token} is stale):"
            " nothing of this batch was written; it is tried again"
        ) from None


# Writes go in ordered bulks, one collection at a time: documents of different collections do
# not depend on each other, and within a collection the unit's order is kept.
BULK = 1000


async def _apply(db: Db, ops: list[Op], session: AsyncClientSession | None = None) -> None:
    by_collection: dict[str, list[Op]] = {}
    for op in ops:
        by_collection.setdefault(op.collection, []).append(op)
    for name, group in by_collection.items():
        for start in range(0, len(group), BULK):
            chunk = group[start : start + BULK]
            if session is None:
                await _replay_bulk(db[name], chunk)
            else:
                await db[name].bulk_write([_request(op) for op in chunk], ordered=True, session=session)


async def _replay_bulk(collection: AsyncCollection[Document], ops: list[Op]) -> None:
    """An outbox's writes applied again (no transaction): an insert that meets its own earlier
    copy is done, and a racing upsert that lost becomes an update."""
    start = 0
    while start < len(ops):
        try:
            await collection.bulk_write([_request(op) for op in ops[start:]], ordered=True)
            return
        except BulkWriteError as exc:
            error = exc.details["writeErrors"][0]
            failed = start + error["index"]
            if error.get("code") != DUPLICATE_KEY:
                raise
            op = ops[failed]
            if op.kind == "update_one":
                await collection.update_one(op.filter, op.update)
            start = failed + 1


def _request(op: Op) -> InsertOne[Document] | ReplaceOne[Document] | UpdateOne | UpdateMany | DeleteMany:
    if op.kind == "insert_one":
        return InsertOne(dict(op.update))
    if op.kind == "replace_one":
        return ReplaceOne(op.filter, op.update)
    if op.kind == "update_one":
        return UpdateOne(op.filter, op.update, upsert=op.upsert)
    if op.kind == "update_many":
        return UpdateMany(op.filter, op.update)
    if op.kind == "delete_many":
        return DeleteMany(op.filter)
    raise ValueError(f"unknown write kind {op.kind!r}")


def replay_outbox(conn: sqlite3.Connection, runtime: MongoRuntime) -> int:
    """Apply, in commit order, the writes an older Teamlore left in a SQLite file's outbox, then
    empty it (under the file's write lock: one applier). The writes applied."""
    if conn.execute("SELECT name FROM sqlite_master WHERE name = 'mongo_outbox'").fetchone() is None:
        return 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        rows = conn.execute("SELECT seq, op FROM mongo_outbox ORDER BY seq").fetchall()
        if rows:
            runtime.run(lambda db: _apply(db, [Op.decode(r[1]) for r in rows]))
            conn.execute("DELETE FROM mongo_outbox WHERE seq <= ?", (rows[-1][0],))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return len(rows)
