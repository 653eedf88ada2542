"""The server configuration: MongoDB for messages, channels, the audit log, review items,
tombstones, pages, page versions, the routing index, the event ledger and shared files' records
(written through one unit of work committed as a MongoDB transaction, ``mongo.journal``), and for
what no unit touches: API tokens, backfill checkpoints and high-water marks, the model spend
ledger and breaker states, the model cache, the embedding cache and shared files' bytes (GridFS;
all written straight to MongoDB). Facts and the message index go to Weaviate (``use_facts``;
``teamlore.app`` refuses MongoDB without it). The dirty set and the push replay guard are Redis's
(``teamlore.app``).

No SQLite file is opened unless something asks for one: an older Teamlore's file in the data
folder is adopted on start (``adopt_file``), and without Redis the dirty set and the replay
guard fall back to the file (``db``). A worker of the full server stack (MongoDB, Weaviate,
Redis) needs no disk of its own."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import partial
from pathlib import Path
from typing import Any, cast

import numpy as np

from teamlore.errors import ConfigurationError
from teamlore.stores.database import Database
from teamlore.stores.embedded import EmbeddedStores
from teamlore.stores.embedded.files import EmbeddedFileStore
from teamlore.stores.embedded.push import EmbeddedReplayGuard
from teamlore.stores.embedded.tokens import EmbeddedTokenStore
from teamlore.stores.embedded.wiki import EmbeddedDirtySet
from teamlore.stores.hashing import KeyedAuditLog, text_key
from teamlore.stores.mongo.audit import MongoAuditLog
from teamlore.stores.mongo.blobs import MongoBlobStore
from teamlore.stores.mongo.embeddings import MongoEmbeddingCache
from teamlore.stores.mongo.files import MongoFileStore
from teamlore.stores.mongo.journal import FENCES, WriteJournal, replay_outbox
from teamlore.stores.mongo.ledger import LEDGER, MongoEventLedger
from teamlore.stores.mongo.llm import MongoModelCache, MongoSpendLedger
from teamlore.stores.mongo.messages import MongoMessageStore
from teamlore.stores.mongo.operational import MongoCheckpointStore, MongoTokenStore
from teamlore.stores.mongo.pages import MongoPageStore
from teamlore.stores.mongo.review import MongoReviewQueue, MongoTombstones
from teamlore.stores.mongo.runtime import Db, MongoRuntime
from teamlore.stores.mongo.schema import ensure_schema
from teamlore.stores.protocols import (
    Checkpoint,
    FactBackend,
    FileRecord,
    FileStatus,
    MessageIndex,
    ReplayGuard,
)
from teamlore.timeutil import from_micros


class _OnWeaviate:
    """Facts and the message index before ``use_facts`` gives them their Weaviate stores."""

    def __init__(self, what: str) -> None:
        self._what = what

    def __getattr__(self, name: str) -> Any:
        raise ConfigurationError(
            f"the server stack keeps {self._what} on Weaviate: set TEAMLORE_WEAVIATE_URL"
        )


class MongoStores(EmbeddedStores):
    """``EmbeddedStores``'s bundle with MongoDB holding what the design gives it (see the module).

    Opening connects, creates the indexes, checks the schema version and adopts an older
    Teamlore's SQLite file if the data folder holds one (``adopt_file``)."""

    def __init__(
        self, path: Path | str, url: str, database: str, timeout_s: float, hash_secret: str = ""
    ) -> None:
        self._path = Path(path)
        self._db: Database | None = None
        self._dirty: EmbeddedDirtySet | None = None
        self._push_seen: ReplayGuard | None = None
        self._remote_facts = None
        self.runtime = MongoRuntime(url, database, timeout_s, setup=ensure_schema)
        try:
            self.runtime.run(lambda mdb: mdb.command("ping"))  # connects, creates the indexes
            self.text_key = text_key(hash_secret, self._path.parent)
            self.journal = WriteJournal(self.runtime)
            self.audit = KeyedAuditLog(MongoAuditLog(self.runtime, self.journal), self.text_key)
            self.facts = cast(FactBackend, _OnWeaviate("facts"))
            self.message_index = cast(MessageIndex, _OnWeaviate("the message index"))
            self.messages = MongoMessageStore(self.runtime, self.journal)
            self.ledger = MongoEventLedger(self.runtime, self.journal)  # type: ignore[assignment]
            self.review = MongoReviewQueue(self.runtime, self.journal)
            self.tombstones = MongoTombstones(self.runtime, self.journal)
            self.pages = MongoPageStore(self.runtime, self.journal)
            self.tokens = MongoTokenStore(self.runtime)
            self.checkpoints = MongoCheckpointStore(self.runtime)
            self.spend = MongoSpendLedger(self.runtime)
            self.model_cache = MongoModelCache(self.runtime)
            self.embeddings = MongoEmbeddingCache(self.runtime)
            self.files = MongoFileStore(self.runtime, self.journal)
            self.blobs = MongoBlobStore(self.runtime)
            if self._path.exists():
                adopt_file(self, self.db)
        except BaseException:
            self.close()
            raise

    # ---- the SQLite file: only when asked for ----

    @property
    def db(self) -> Database:  # type: ignore[override]
        """The data folder's SQLite file, opened (and made) on first use: an older Teamlore's
        file to adopt, ``teamlore weaviate load-*``'s source, the fallbacks without Redis."""
        if self._db is None:
            self._db = Database(self._path)
        return self._db

    @property
    def dirty(self) -> EmbeddedDirtySet:  # type: ignore[override]
        if self._dirty is None:
            self._dirty = EmbeddedDirtySet(self.db)
        return self._dirty

    @property
    def push_seen(self) -> ReplayGuard:  # type: ignore[override]
        if self._push_seen is None:
            self._push_seen = EmbeddedReplayGuard(self.db)
        return self._push_seen

    # ---- the unit of work ----

    @contextmanager
    def transaction(self, savepoint: bool = False) -> Iterator[object]:
        """A unit of work (``mongo.journal``) with the Weaviate stores' writes joined to it: a
        failure undoes those, and a MongoDB commit that fails undoes them too."""
        remote = self._remote_facts
        with (
            remote.unit_of_work(savepoint) if remote is not None else nullcontext(),
            self.journal.transaction(savepoint),
        ):
            yield None

    def fenced(self, fences: Mapping[str, int]) -> AbstractContextManager[None]:
        return self.journal.fenced(fences)

    def committed_fence(self, key: str) -> int:
        """The newest channel lock token whose unit committed (0: none yet; ``mongo.journal``)."""
        doc = self.runtime.run(lambda mdb: mdb[FENCES].find_one({"_id": key}))
        return 0 if doc is None else int(doc["fence"])

    def ping(self) -> None:
        self.runtime.run(lambda mdb: mdb.command("ping"))

    def scrub(self) -> None:
        """An older file's free pages and write-ahead log, if one was opened; MongoDB and
        Weaviate keep no copy of erased text of their own accord."""
        if self._db is not None:
            self._db.scrub()

    def close(self) -> None:
        if self._remote_facts is not None:
            self._remote_facts.close()
        self.runtime.close()
        if self._db is not None:
            self._db.close()


# ---- adopting an older Teamlore's file ----


def adopt_file(stores: MongoStores, db: Database) -> int:
    """Adopt the SQLite file an older Teamlore kept beside MongoDB. Older server stacks kept the
    event ledger, shared files' records, the outbox of MongoDB writes, tokens, checkpoints and
    cached vectors in it; each moves to MongoDB once, and running it again (or in several
    processes at once) copies nothing twice: the outbox's writes are applied in commit order,
    then emptied (``journal.replay_outbox``); tokens, checkpoints, ledger keys and file records
    are copied where MongoDB has none under the key (never undoing a later revocation, outcome
    or status); cached vectors are moved (copied where absent, then deleted from the file:
    erasure's ``forget`` reaches MongoDB's cache only, so a copy left in the file would outlive
    it). The records and vectors moved or copied."""
    replay_outbox(db.conn, stores.runtime)
    return adopt_file_records(stores, db) + move_file_vectors(stores, db)


def adopt_file_records(stores: MongoStores, db: Database) -> int:
    """Copy the tokens, checkpoints, ledger keys and file records of the file into MongoDB, each
    only if MongoDB has none under its key. Without it an upgrade would lock out every token,
    restart every backfill and apply again every event a platform re-sends."""
    copied = 0
    for record in EmbeddedTokenStore(db).all():
        if stores.tokens.get(record.token_id) is None:
            stores.tokens.add(record)
            copied += 1
    rows = db.conn.execute(
        "SELECT platform, workspace, channel, cursor, done, fetched, updated_at FROM backfill_checkpoints"
    ).fetchall()
    for platform, workspace, channel, cursor, done, fetched, updated_at in rows:
        if stores.checkpoints.get(platform, workspace, channel) is None:
            checkpoint = Checkpoint(cursor, bool(done), fetched)
            stores.checkpoints.put(platform, workspace, channel, checkpoint, from_micros(updated_at))
            copied += 1
    keys = db.conn.execute("SELECT key, outcome, at FROM event_ledger").fetchall()
    for start in range(0, len(keys), 1000):
        chunk = [{"_id": k, "outcome": o, "at_us": at} for k, o, at in keys[start : start + 1000]]
        copied += stores.runtime.run(partial(_insert_absent, docs=chunk))
    for held in _file_records(db):
        if stores.files.get(held.workspace, held.channel, held.message_id, held.position) is None:
            stores.files.put(held)
            copied += 1
    return copied


async def _insert_absent(mdb: Db, docs: list[dict[str, Any]]) -> int:
    found = await mdb[LEDGER].find({"_id": {"$in": [d["_id"] for d in docs]}}, {"_id": 1}).to_list()
    held = {d["_id"] for d in found}
    new = [d for d in docs if d["_id"] not in held]
    if new:
        await mdb[LEDGER].insert_many(new, ordered=False)
    return len(new)


def _file_records(db: Database) -> Iterator[FileRecord]:
    store = EmbeddedFileStore(db)
    for workspace, channel in db.conn.execute("SELECT DISTINCT workspace, channel FROM shared_files"):
        yield from store.with_status(workspace, [channel], tuple(FileStatus))


def move_file_vectors(stores: MongoStores, db: Database, batch: int = 1000) -> int:
    """Move the file's cached vectors into MongoDB's embedding cache, a batch at a time. The
    vectors moved."""
    moved = 0
    while rows := db.conn.execute(
        "SELECT key, model, vector FROM embeddings ORDER BY key LIMIT ?", (batch,)
    ).fetchall():
        by_model: dict[str, dict[str, np.ndarray]] = {}
        for key, model, blob in rows:
            by_model.setdefault(model, {})[key] = np.frombuffer(blob, dtype=np.float32)
        for model, vectors in by_model.items():
            stores.embeddings.put_vectors(model, vectors)
        with db.transaction() as conn:
            conn.executemany("DELETE FROM embeddings WHERE key = ?", [(row[0],) for row in rows])
        moved += len(rows)
    return moved


__all__ = ["MongoStores", "adopt_file", "adopt_file_records", "move_file_vectors"]
