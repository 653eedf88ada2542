"""The server configuration's MongoDB half: messages, channels, the audit log, review items,
tombstones, pages, page versions and the routing index. Facts, their vectors, the embedding
cache, the ledger of applied events, API tokens and backfill checkpoints stay in the SQLite file
(facts move to Weaviate later); the dirty set stays embedded or on Redis."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

from teamlore.stores.embedded.database import Database
from teamlore.stores.embedded.facts import EmbeddedFactBackend
from teamlore.stores.embedded.messages import EmbeddedEmbeddingCache, EmbeddedEventLedger
from teamlore.stores.embedded.tokens import EmbeddedCheckpointStore, EmbeddedTokenStore
from teamlore.stores.embedded.wiki import EmbeddedDirtySet
from teamlore.stores.mongo.audit import MongoAuditLog
from teamlore.stores.mongo.journal import WriteJournal
from teamlore.stores.mongo.messages import MongoMessageStore
from teamlore.stores.mongo.pages import MongoPageStore
from teamlore.stores.mongo.review import MongoReviewQueue, MongoTombstones
from teamlore.stores.mongo.runtime import MongoRuntime
from teamlore.stores.mongo.schema import ensure_schema


class MongoStores:
    """The same bundle as ``EmbeddedStores``, with MongoDB holding what the design gives it.

    ``transaction`` is the SQLite file's; Mongo writes made inside one follow its commit (see
    ``journal``). Opening connects, creates the indexes, checks the schema version and applies
    any writes a previous process committed but did not get to MongoDB.
    """

    def __init__(self, path: Path | str, url: str, database: str, timeout_s: float) -> None:
        self.runtime = MongoRuntime(url, database, timeout_s, setup=ensure_schema)
        self.db = Database(path)
        try:
            self.journal = WriteJournal(self.db, self.runtime)
            self.audit = MongoAuditLog(self.runtime, self.journal)
            self.facts = EmbeddedFactBackend(self.db, self.audit)
            self.messages = MongoMessageStore(self.runtime, self.journal)
            self.embeddings = EmbeddedEmbeddingCache(self.db)
            self.review = MongoReviewQueue(self.runtime, self.journal)
            self.tombstones = MongoTombstones(self.runtime, self.journal)
            self.pages = MongoPageStore(self.runtime, self.journal)
            self.dirty = EmbeddedDirtySet(self.db)
            # Beside the facts on purpose: the ledger of applied events commits with them.
            self.ledger = EmbeddedEventLedger(self.db)
            self.tokens = EmbeddedTokenStore(self.db)
            self.checkpoints = EmbeddedCheckpointStore(self.db)
            self.runtime.run(lambda mdb: mdb.command("ping"))  # connects, creates the indexes
            self.journal.replay()
        except BaseException:
            self.close()
            raise

    def transaction(self, savepoint: bool = False) -> AbstractContextManager[object]:
        return self.db.transaction(savepoint)

    def close(self) -> None:
        self.runtime.close()
        self.db.close()


__all__ = ["MongoStores"]
