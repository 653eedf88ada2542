"""The server configuration: the SQLite file with MongoDB beside it for messages, channels, the
audit log, review items, tombstones, pages, page versions and the routing index. Everything else
stays where ``EmbeddedStores`` keeps it: facts in the SQLite file (or on Weaviate, through
``use_facts``), vectors, the embedding cache, the ledger of applied events, tokens, checkpoints,
the model cache and spend, and the dirty set (or Redis)."""

from __future__ import annotations

from pathlib import Path

from teamlore.stores.embedded import EmbeddedStores
from teamlore.stores.embedded.facts import EmbeddedFactBackend
from teamlore.stores.hashing import KeyedAuditLog
from teamlore.stores.mongo.audit import MongoAuditLog
from teamlore.stores.mongo.journal import WriteJournal
from teamlore.stores.mongo.messages import MongoMessageStore
from teamlore.stores.mongo.pages import MongoPageStore
from teamlore.stores.mongo.review import MongoReviewQueue, MongoTombstones
from teamlore.stores.mongo.runtime import MongoRuntime
from teamlore.stores.mongo.schema import ensure_schema


class MongoStores(EmbeddedStores):
    """``EmbeddedStores`` with MongoDB holding what the design gives it.

    ``transaction`` is still the SQLite file's; Mongo writes made inside one follow its commit
    (see ``journal``). Opening connects, creates the indexes, checks the schema version and
    applies any writes a previous process committed but did not get to MongoDB.
    """

    def __init__(
        self, path: Path | str, url: str, database: str, timeout_s: float, hash_secret: str = ""
    ) -> None:
        super().__init__(path, hash_secret)
        self.runtime = MongoRuntime(url, database, timeout_s, setup=ensure_schema)
        try:
            self.journal = WriteJournal(self.db, self.runtime)
            self.audit = KeyedAuditLog(MongoAuditLog(self.runtime, self.journal), self.text_key)
            self.facts = EmbeddedFactBackend(self.db, self.audit)
            self.messages = MongoMessageStore(self.runtime, self.journal)
            self.review = MongoReviewQueue(self.runtime, self.journal)
            self.tombstones = MongoTombstones(self.runtime, self.journal)
            self.pages = MongoPageStore(self.runtime, self.journal)
            self.runtime.run(lambda mdb: mdb.command("ping"))  # connects, creates the indexes
            self.journal.replay()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self.runtime.close()
        super().close()


__all__ = ["MongoStores"]
