"""MongoDB writes that follow the SQLite file's transactions (a transactional outbox).

Facts live in SQLite; messages, the audit log, tombstones, review items and pages in MongoDB.
The pipeline reads a stored message to decide whether an event was already applied, so a
message that reached MongoDB while its facts rolled back (or the process died before the
commit) would make a re-delivery skip facts that were never written. Hence:

- A Mongo write made inside a SQLite transaction is held in memory, per savepoint: a savepoint
  that rolls back drops its writes with its rows.
- Just before the outermost COMMIT the held writes become rows of ``mongo_outbox`` in the same
  SQLite transaction: they commit, or vanish, with the facts.
- The outbox is applied to MongoDB in order and emptied right after the commit, and again at
  the start of every transaction (under SQLite's write lock: one applier, commit order, and a
  transaction reads MongoDB only after every earlier commit has reached it). If MongoDB is down
  the rows stay and the caller gets ``BackendUnavailable``.
- Every write is idempotent when applied again in order (inserts that meet their own earlier
  copy are dropped, replacements and updates set values), so a crash between applying and
  emptying replays harmlessly.
- A write made outside any transaction opens one of its own, so all writes keep one order.

Reads inside an open transaction see this thread's held writes for the point lookups the
pipeline makes in the same transaction (``pending``); list reads see what MongoDB holds.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pymongo import DeleteMany, InsertOne, ReplaceOne, UpdateMany, UpdateOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import BulkWriteError

from teamlore.stores.database import Database
from teamlore.stores.mongo.codec import Op
from teamlore.stores.mongo.runtime import Db, Document, MongoRuntime

OUTBOX = "CREATE TABLE IF NOT EXISTS mongo_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, op BLOB NOT NULL)"
MISSING: Any = object()
DUPLICATE_KEY = 11000


@dataclass(slots=True)
class Level:
    """What one transaction level (the outermost, or a savepoint) holds."""

    ops: list[Op] = field(default_factory=list)
    # What a read inside the transaction should see: (namespace, key) -> value.
    overlay: dict[tuple[str, Hashable], object] = field(default_factory=dict)


class WriteJournal:
    """Holds Mongo writes inside SQLite transactions and applies them after the commit (see the
    module)."""

    def __init__(self, db: Database, runtime: MongoRuntime) -> None:
        self._db, self._runtime = db, runtime
        self._local = threading.local()
        db.conn.execute(OUTBOX)
        db.listener = self

    @property
    def _levels(self) -> list[Level]:
        levels = getattr(self._local, "levels", None)
        if levels is None:
            levels = self._local.levels = []
        return levels

    def write(self, op: Op | None, overlay: tuple[str, Hashable, object] | None = None) -> None:
        """Hold ``op`` until the enclosing transaction commits (open one if there is none).
        ``op`` None records only an overlay (a value a read in this transaction must see)."""
        with self._db.transaction():
            level = self._levels[-1]
            if op is not None:
                level.ops.append(op)
            if overlay is not None:
                level.overlay[overlay[:2]] = overlay[2]

    def remember(self, namespace: str, key: Hashable, value: object) -> None:
        """Keep what a read inside a transaction found, for later reads in it: MongoDB cannot
        change meanwhile, as every write to it waits for SQLite's write lock, held here."""
        if self._levels:
            self._levels[-1].overlay[(namespace, key)] = value

    def pending(self, namespace: str, key: Hashable) -> Any:
        """The latest held value for ``key`` in this thread's open transaction, else MISSING."""
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

    # ---- the SQLite transaction's boundaries (TransactionListener) ----

    def begun(self, depth: int) -> None:
        del self._levels[depth:]
        self._levels.append(Level())
        if depth == 0:
            self._drain(self._db.conn)

    def rolled_back(self, depth: int) -> None:
        del self._levels[depth:]

    def released(self, depth: int) -> None:
        levels = self._levels
        if len(levels) > depth:
            inner = levels.pop()
            levels[depth - 1].ops.extend(inner.ops)
            levels[depth - 1].overlay.update(inner.overlay)

    def before_commit(self, conn: sqlite3.Connection) -> None:
        ops = self._levels[0].ops if self._levels else []
        conn.executemany("INSERT INTO mongo_outbox (op) VALUES (?)", [(op.encode(),) for op in ops])
        self._local.wrote = bool(ops)

    def committed(self) -> None:
        self._levels.clear()
        if getattr(self._local, "wrote", False):
            self._local.wrote = False
            self.replay()

    # ---- applying ----

    def replay(self) -> int:
        """Apply every committed, not yet applied write to MongoDB, in commit order."""
        conn = self._db.conn
        if conn.execute("SELECT 1 FROM mongo_outbox LIMIT 1").fetchone() is None:
            return 0
        conn.execute("BEGIN IMMEDIATE")  # the write lock: one applier, commit order
        try:
            applied = self._drain(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return applied

    def _drain(self, conn: sqlite3.Connection) -> int:
        """Apply and delete the outbox rows (call holding the write lock; the caller commits)."""
        rows = conn.execute("SELECT seq, op FROM mongo_outbox ORDER BY seq").fetchall()
        if rows:
            self._runtime.run(lambda mdb: _apply(mdb, [Op.decode(r[1]) for r in rows]))
            conn.execute("DELETE FROM mongo_outbox WHERE seq <= ?", (rows[-1][0],))
        return len(rows)

    def backlog(self) -> int:
        return int(self._db.conn.execute("SELECT count(*) FROM mongo_outbox").fetchone()[0])


# Writes go in ordered bulks, one collection at a time: documents of different collections do
# not depend on each other, and within a collection the commit order is kept.
BULK = 1000


async def _apply(db: Db, ops: list[Op]) -> None:
    by_collection: dict[str, list[Op]] = {}
    for op in ops:
        by_collection.setdefault(op.collection, []).append(op)
    for name, group in by_collection.items():
        for start in range(0, len(group), BULK):
            await _bulk(db[name], group[start : start + BULK])


async def _bulk(collection: AsyncCollection[Document], ops: list[Op]) -> None:
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
                # Two upserts raced to insert; the document exists now, so update it.
                await collection.update_one(op.filter, op.update)
            # An insert that meets its earlier copy: applied before (a replay), or another
            # writer's same row. Either way it is done; go on after it.
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
